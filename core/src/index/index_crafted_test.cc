// Crafted indexes: valid identity and checksum (anyone can compute both),
// hostile counts and offsets. TraceIndex::Open must refuse them (the index
// is then rebuilt) and the decoders must never read outside the file.
#include <gtest/gtest.h>

#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include "backstep/core/arch.h"
#include "backstep/core/plain_syscalls.h"
#include "backstep/core/register_file.h"
#include "backstep/testing/index_fuzz.h"
#include "index/full_register_record.h"
#include "index/trace_index.h"
#include "util/hex.h"

namespace backstep::core {
namespace {

using testing::IndexSeedFiles;
using testing::SealIndex;

struct Layout {
  std::uint64_t directory, threads, runs, keyframes, segments;
  IndexDirectory dir;
};

Layout LayoutOf(const std::vector<std::uint8_t>& bytes) {
  const auto footer = LoadRecord<IndexFooter>(bytes.data() + bytes.size() - kFooterSize);
  Layout l;
  l.directory = footer.directory_offset;
  l.dir = LoadRecord<IndexDirectory>(bytes.data() + l.directory);
  l.threads = l.directory + sizeof(IndexDirectory);
  l.runs = l.threads + l.dir.thread_count * sizeof(ThreadRecord);
  l.keyframes = l.runs + l.dir.run_count * sizeof(RunRecord);
  l.segments = l.keyframes + l.dir.keyframe_count * sizeof(KeyframeRecord) +
               l.dir.memory_clear_count * 8 +
               l.dir.register_clear_count * sizeof(RegisterClearRecord);
  return l;
}

template <class T>
void Put(std::vector<std::uint8_t>& bytes, std::uint64_t at, T value) {
  std::memcpy(bytes.data() + at, &value, sizeof(T));
}

Status OpenStatus(std::vector<std::uint8_t> bytes) {
  SealIndex(bytes);
  auto owned = std::make_shared<std::vector<std::uint8_t>>(std::move(bytes));
  auto index = TraceIndex::Open(owned, *owned, {});
  return index.ok() ? Status() : index.status();
}

TEST(CraftedIndexTest, SealedSeedsOpen) {
  const auto seeds = IndexSeedFiles();
  ASSERT_EQ(seeds.size(), 2u);
  for (const auto& seed : seeds) EXPECT_TRUE(OpenStatus(seed).ok()) << OpenStatus(seed).ToString();
}

// The second seed's trace is read through copies: its short writes are
// inline, so the fuzzer starts from XOR-form entries too.
TEST(CraftedIndexTest, SecondSeedHoldsXorForms) {
  std::vector<std::uint8_t> bytes = IndexSeedFiles().at(1);
  SealIndex(bytes);
  auto owned = std::make_shared<std::vector<std::uint8_t>>(std::move(bytes));
  auto index = TraceIndex::Open(owned, *owned, {});
  ASSERT_TRUE(index.ok()) << index.status().ToString();
  std::uint64_t entries = 0, xor_forms = 0;
  for (std::uint64_t page : (*index)->ListedPages(kWriteList, 0, ~std::uint64_t(0) >> kPageBits)) {
    const Address lo = page << kPageBits;
    (*index)->ScanAccesses(kWriteList, lo, lo + kPageSize, 0, (*index)->event_count(),
                           [&](const AccessHit& hit) {
                             ++entries;
                             xor_forms += hit.entry.decoded;
                             return true;
                           });
  }
  EXPECT_GE(xor_forms, 20u) << "of " << entries << " write entries";
}

TEST(CraftedIndexTest, CountsThatWrapAreRefused) {
  const std::vector<std::uint8_t> good = IndexSeedFiles().at(0);
  const Layout l = LayoutOf(good);
  ASSERT_GE(l.dir.thread_count, 1u);
  ASSERT_GE(l.dir.segment_count, 1u);
  const std::uint64_t wraps8 = (std::uint64_t(1) << 61) + 1;   // * 8 wraps to 8
  const std::uint64_t wraps32 = (std::uint64_t(1) << 59) + 1;  // * 32 wraps to 32
  struct Case {
    const char* what;
    std::uint64_t at, value;
  } cases[] = {
      {"thread run_count", l.threads + offsetof(ThreadRecord, run_count), wraps8},
      {"segment pc_count", l.segments + offsetof(SegmentRecord, pc_count), wraps32},
      {"segment page_count",
       l.segments + offsetof(SegmentRecord, lists) + offsetof(ListRecord, page_count), wraps32},
      {"run thread_index", l.runs + offsetof(RunRecord, thread_index), 7},
  };
  for (const Case& c : cases) {
    std::vector<std::uint8_t> bad = good;
    Put(bad, c.at, c.value);
    const Status s = OpenStatus(bad);
    EXPECT_TRUE(s.IsCorruption()) << c.what << ": " << s.ToString();
  }
}

TEST(CraftedIndexTest, RegisterLayoutMustBeTheArchitectures) {
  // A directory claiming more register storage than x86-64 has: restoring
  // a keyframe must not copy past the register file (it leaves it unknown).
  std::vector<std::uint8_t> bad = IndexSeedFiles().at(0);
  const Layout l = LayoutOf(bad);
  Put(bad, l.directory + offsetof(IndexDirectory, register_storage_size),
      l.dir.register_storage_size + 64);
  SealIndex(bad);
  auto owned = std::make_shared<std::vector<std::uint8_t>>(std::move(bad));
  auto index = TraceIndex::Open(owned, *owned, {});
  ASSERT_TRUE(index.ok()) << index.status().ToString();
  std::vector<RegisterFile> files((*index)->thread_count(), RegisterFile(X86_64()));
  (*index)->RestoreKeyframe(0, files);
  for (const RegisterFile& f : files) EXPECT_FALSE(f.known(X86_64().pc()));
}

// The full record the first keyframe with a known pc restores from, with
// the keyframe's index and the record's offset.
struct FullRecordAt {
  std::uint64_t keyframe, offset;
};
std::optional<FullRecordAt> FirstFullRecordWithWords(const std::vector<std::uint8_t>& bytes) {
  const Layout l = LayoutOf(bytes);
  for (std::uint64_t k = 0; k < l.dir.keyframe_count; ++k) {
    const auto kf =
        LoadRecord<KeyframeRecord>(bytes.data() + l.keyframes + k * sizeof(KeyframeRecord));
    if (kf.ref_count == 0) continue;
    std::uint64_t at = LoadRecord<RefRecord>(bytes.data() + kf.refs_offset).record_offset;
    auto h = LoadRecord<RegisterRecordHeader>(bytes.data() + at);
    while (h.kind == kDeltaRecord)
      at = h.prev, h = LoadRecord<RegisterRecordHeader>(bytes.data() + at);
    if (h.count > 0) return FullRecordAt{k, at};
  }
  return std::nullopt;
}

bool RestoresPc(std::vector<std::uint8_t> bytes, std::uint64_t keyframe) {
  SealIndex(bytes);
  auto owned = std::make_shared<std::vector<std::uint8_t>>(std::move(bytes));
  auto index = TraceIndex::Open(owned, *owned, {});
  EXPECT_TRUE(index.ok()) << index.status().ToString();
  if (!index.ok()) return false;
  std::vector<RegisterFile> files((*index)->thread_count(), RegisterFile(X86_64()));
  (*index)->RestoreKeyframe(keyframe, files);
  return files.at(0).known(X86_64().pc());
}

TEST(CraftedIndexTest, DamagedFullRegisterRecordsLeaveTheRegistersUnknown) {
  const std::vector<std::uint8_t> good = IndexSeedFiles().at(0);
  const auto full = FirstFullRecordWithWords(good);
  ASSERT_TRUE(full.has_value());
  ASSERT_TRUE(RestoresPc(good, full->keyframe));
  const auto h = LoadRecord<RegisterRecordHeader>(good.data() + full->offset);
  const std::uint64_t storage = LayoutOf(good).dir.register_storage_size;
  const std::uint64_t bitmap = full->offset + sizeof(RegisterRecordHeader);
  const std::uint64_t last_bitmap_word = bitmap + 8 * (FullRecordBitmapWords(storage) - 1);
  const std::uint64_t bits_in_last = FullRecordStorageWords(storage) % 64;
  ASSERT_NE(bits_in_last, 0u);  // x86-64: 415 words, 31 in the last bitmap word
  struct Case {
    const char* what;
    std::uint64_t at;
    std::uint64_t value;
    bool u32;
  };
  const Case cases[] = {
      {"one word more than the bitmap sets", full->offset + 4, h.count + 1, true},
      {"more words than the file holds", full->offset + 4, 0xffffffffu, true},
      {"a bit past the storage", last_bitmap_word,
       LoadRecord<std::uint64_t>(good.data() + last_bitmap_word) |
           (std::uint64_t(1) << bits_in_last),
       false},
  };
  for (const Case& c : cases) {
    std::vector<std::uint8_t> bad = good;
    if (c.u32) {
      Put(bad, c.at, static_cast<std::uint32_t>(c.value));
    } else {
      Put(bad, c.at, c.value);
    }
    EXPECT_FALSE(RestoresPc(bad, full->keyframe)) << c.what;
  }
}

TEST(CraftedIndexTest, DamagedNotedEventsAreRefusedNamingTheirOffset) {
  const std::vector<std::uint8_t> good = IndexSeedFiles().at(0);
  const Layout l = LayoutOf(good);
  ASSERT_GE(l.dir.note_count, 2u);  // the fixture's events carry notes
  ASSERT_TRUE(l.dir.flags & kDirNotes);
  const std::uint64_t notes = l.segments + l.dir.segment_count * sizeof(SegmentRecord);
  const std::uint64_t second = notes + sizeof(NoteRecord);
  {
    auto owned = std::make_shared<std::vector<std::uint8_t>>(good);
    SealIndex(*owned);
    auto index = TraceIndex::Open(owned, *owned, {});
    ASSERT_TRUE(index.ok()) << index.status().ToString();
    ASSERT_EQ((*index)->note_count(), l.dir.note_count);
    EXPECT_FALSE((*index)->note(0).description.empty());
  }
  struct Case {
    const char* what;
    std::uint64_t at, value;
    const char* says;
  } cases[] = {
      {"event past the end", second + offsetof(NoteRecord, event), l.dir.event_count,
       "noted event 1: event"},
      {"events out of order", second + offsetof(NoteRecord, event), 0, "noted event 1: event"},
      {"text past the note text", second + offsetof(NoteRecord, text_offset), l.dir.note_text_size,
       "noted event 1: text past"},
      {"text offset that wraps", second + offsetof(NoteRecord, text_offset), ~std::uint64_t(0),
       "noted event 1: text past"},
  };
  for (const Case& c : cases) {
    std::vector<std::uint8_t> bad = good;
    Put(bad, c.at, c.value);
    const Status s = OpenStatus(bad);
    EXPECT_TRUE(s.IsCorruption()) << c.what << ": " << s.ToString();
    EXPECT_NE(s.ToString().find("index at offset " + HexU64(second) + ": "), std::string::npos)
        << c.what << ": " << s.ToString();
    EXPECT_NE(s.ToString().find(c.says), std::string::npos) << c.what << ": " << s.ToString();
  }
  std::vector<std::uint8_t> kind = good;
  Put(kind, second + offsetof(NoteRecord, kind), std::uint32_t(99));
  EXPECT_NE(OpenStatus(kind).ToString().find("noted event 1: bad event kind 99"), std::string::npos)
      << OpenStatus(kind).ToString();
  // Counts that do not add up to the directory, and notes without the flag.
  std::vector<std::uint8_t> count = good;
  Put(count, l.directory + offsetof(IndexDirectory, note_count), (std::uint64_t(1) << 59) + 1);
  EXPECT_TRUE(OpenStatus(count).IsCorruption()) << OpenStatus(count).ToString();
  std::vector<std::uint8_t> text = good;
  Put(text, l.directory + offsetof(IndexDirectory, note_text_size), ~std::uint64_t(0));
  EXPECT_TRUE(OpenStatus(text).IsCorruption()) << OpenStatus(text).ToString();
  std::vector<std::uint8_t> flag = good;
  Put(flag, l.directory + offsetof(IndexDirectory, flags), l.dir.flags & ~kDirNotes);
  EXPECT_TRUE(OpenStatus(flag).IsCorruption()) << OpenStatus(flag).ToString();
}

TEST(CraftedIndexTest, DamagedPlainSyscallsAreRefusedNamingTheirOffset) {
  const std::vector<std::uint8_t> good = IndexSeedFiles().at(0);
  const Layout l = LayoutOf(good);
  ASSERT_GE(l.dir.plain_syscall_count, 2u);  // the fixture's write() calls
  const std::uint64_t skips = l.segments + l.dir.segment_count * sizeof(SegmentRecord) +
                              l.dir.note_count * sizeof(NoteRecord) + Align8(l.dir.note_text_size);
  const std::uint64_t stream = skips + sizeof(SyscallSkipRecord);  // one block
  {
    auto owned = std::make_shared<std::vector<std::uint8_t>>(good);
    SealIndex(*owned);
    auto index = TraceIndex::Open(owned, *owned, {});
    ASSERT_TRUE(index.ok()) << index.status().ToString();
    std::vector<PlainSyscall> calls;
    (*index)->plain_syscalls().Decode(0, &calls);
    ASSERT_EQ(calls.size(), l.dir.plain_syscall_count);
    EXPECT_EQ(calls[0].number, 1u);
    EXPECT_EQ(calls[0].event, LoadRecord<SyscallSkipRecord>(good.data() + skips).first_event);
  }
  auto expect_refused = [&](const std::vector<std::uint8_t>& bad, std::uint64_t at,
                            const std::string& says) {
    const Status s = OpenStatus(bad);
    EXPECT_TRUE(s.IsCorruption()) << says << ": " << s.ToString();
    EXPECT_NE(s.ToString().find("index at offset " + HexU64(at) + ": " + says), std::string::npos)
        << s.ToString();
  };
  std::vector<std::uint8_t> offset = good;
  Put(offset, skips + offsetof(SyscallSkipRecord, offset), std::uint64_t(1));
  expect_refused(offset, stream, "plain system call 0: skip record 0 does not start its block");
  std::vector<std::uint8_t> past = good;
  Put(past, skips + offsetof(SyscallSkipRecord, first_event), l.dir.event_count);
  expect_refused(past, stream, "plain system call 0: event");
  // The second call's event delta made 0 (the first call takes two bytes:
  // a zero delta and the number 1).
  ASSERT_EQ(good[stream], 0);
  ASSERT_EQ(good[stream + 1], 1);
  std::vector<std::uint8_t> delta = good;
  delta[stream + 2] = 0;
  expect_refused(delta, stream + 2, "plain system call 1: event delta 0");
  // One call more than the stream holds (the same number of blocks).
  ASSERT_NE(l.dir.plain_syscall_count % kPlainSyscallsPerBlock, 0u);
  std::vector<std::uint8_t> count = good;
  Put(count, l.directory + offsetof(IndexDirectory, plain_syscall_count),
      l.dir.plain_syscall_count + 1);
  const Status cut = OpenStatus(count);
  EXPECT_NE(cut.ToString().find("plain system call " + std::to_string(l.dir.plain_syscall_count) +
                                ": cut short or malformed"),
            std::string::npos)
      << cut.ToString();
  // A stream size that does not add up to the directory.
  std::vector<std::uint8_t> size = good;
  Put(size, l.directory + offsetof(IndexDirectory, plain_syscall_stream_size), ~std::uint64_t(0));
  EXPECT_TRUE(OpenStatus(size).IsCorruption()) << OpenStatus(size).ToString();
}

TEST(CraftedIndexTest, EveryDamagedByteIsRefusedOrAnswered) {
  // The fuzz body on single-byte changes of a valid index, every third byte
  // of the first seed and every seventh of the second (its entries are XOR
  // forms; twice the first's size): under the sanitizers any read outside
  // the file aborts; here, no crash or hang.
  const auto seeds = IndexSeedFiles();
  for (std::size_t s = 0; s < seeds.size(); ++s) {
    const std::vector<std::uint8_t>& good = seeds[s];
    for (std::size_t i = kHeaderSize; i + kFooterSize < good.size(); i += s == 0 ? 3 : 7) {
      std::vector<std::uint8_t> bad = good;
      bad[i] ^= static_cast<std::uint8_t>(0x80 | (i & 0x7f));
      testing::FuzzIndex(bad.data(), bad.size());
    }
  }
}

}  // namespace
}  // namespace backstep::core
