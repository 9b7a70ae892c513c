// The access-list entry encoding of index format versions 6 and 8: XOR forms
// (short data as the XOR with the block's previous data at its offset, else
// of its length) and repeat
// forms (the event delta and head of a recent entry), from the builder to the
// decoder and through the queries of a whole index.
#include <gtest/gtest.h>

#include <cstring>
#include <random>

#include "backstep/core/arch.h"
#include "backstep/testing/fake_trace.h"
#include "index/access_list_builder.h"
#include "index/index_sink.h"
#include "index/trace_index.h"
#include "replay/trace_index_of.h"

namespace backstep::core {
namespace {

struct Input {
  std::uint64_t event;
  std::uint32_t offset;
  std::vector<std::uint8_t> data;
};

std::vector<std::uint8_t> Le(std::uint64_t v, std::uint32_t n) {
  std::vector<std::uint8_t> out(n);
  std::memcpy(out.data(), &v, n);
  return out;
}

// Flushes `list` (one page) and decodes every entry back; checks them
// against `in` and returns the bytes its blocks' entries take.
std::uint64_t ExpectRoundTrip(AccessListBuilder& list, const std::vector<Input>& in,
                              bool without_data) {
  VectorIndexSink sink;
  const ListRecord rec = list.Flush(sink, false);
  const std::vector<std::uint8_t>& b = sink.bytes();
  EXPECT_EQ(rec.page_count, 1u);
  const auto page = LoadRecord<PageRecord>(b.data() + rec.pages_offset);
  std::uint64_t bytes = 0;
  std::size_t next = 0;
  for (std::uint32_t k = 0; k < page.block_count; ++k) {
    const auto block = LoadRecord<BlockRecord>(b.data() + page.blocks_offset + k * 32);
    bytes += block.data_size;
    EntryDecoder decoder(b.data() + block.data_offset,
                         b.data() + block.data_offset + block.data_size, block.first_event,
                         without_data);
    for (std::uint32_t j = 0; j < block.entry_count; ++j, ++next) {
      const AccessEntry e = decoder.Next();
      EXPECT_LT(next, in.size());
      if (next >= in.size()) return bytes;
      const Input& want = in[next];
      EXPECT_EQ(e.event, want.event) << "entry " << next;
      EXPECT_EQ(e.offset, want.offset) << "entry " << next;
      EXPECT_EQ(e.length, want.data.size()) << "entry " << next;
      if (e.length != want.data.size()) return bytes;
      if (!without_data) {
        EXPECT_EQ(std::vector<std::uint8_t>(e.data, e.data + e.length), want.data)
            << "entry " << next;
      }
    }
  }
  EXPECT_EQ(next, in.size());
  return bytes;
}

// 8-byte stores of pointers that share their high bytes and 4-byte stores
// of small integers: the XOR with the previous value of the same length
// keeps 1-2 bytes. Version 5 stored them whole (1 + 2 + 8 and 1 + 2 + 4).
TEST(AccessEntryTest, ShortDataIsXorCodedAgainstThePreviousOfItsLength) {
  AccessListBuilder list(64, 128, false, {});
  std::vector<Input> in;
  for (std::uint64_t i = 0; i < 256; ++i) {
    const std::uint64_t event = 3 * i + (i % 3);
    const bool pointer = i % 2 == 0;
    const auto offset =
        static_cast<std::uint32_t>(pointer ? 0x800 + 8 * (i % 32) : 0x100 + 4 * (i % 5));
    in.push_back({event, offset, pointer ? Le(0x7ffd12345000 + 24 * i, 8) : Le(1000 + i, 4)});
  }
  for (const Input& x : in) {
    list.Add(x.event, 7, x.offset, x.data, std::nullopt, 0, x.data.size());
  }
  const std::uint64_t bytes = ExpectRoundTrip(list, in, false);
  EXPECT_LE(bytes, 256u * 5) << "v5 took " << 128 * 11 + 128 * 7;
}

// An -O0 loop's locals: a pointer, a counter and a large value in three
// stack slots, written in turn. Version 8 XORs each with the previous value
// of its own slot (one byte stored); version 6 XORed it with the previous
// 8-byte value, another slot's, and most of them stayed whole (8 bytes).
TEST(AccessEntryTest, ShortDataIsXorCodedAgainstThePreviousAtItsOffset) {
  AccessListBuilder list(64, 128, false, {});
  std::vector<Input> in;
  for (std::uint64_t i = 0; i < 192; ++i) {
    const std::uint64_t values[3] = {0x7ffd12345000 + 8 * (i / 3), i / 3,
                                     0x0123456789abcd00 + i / 3};
    in.push_back({2 * i, static_cast<std::uint32_t>(0xf00 + 8 * (i % 3)), Le(values[i % 3], 8)});
  }
  for (const Input& x : in) {
    list.Add(x.event, 7, x.offset, x.data, std::nullopt, 0, x.data.size());
  }
  const std::uint64_t bytes = ExpectRoundTrip(list, in, false);
  EXPECT_LE(bytes, 192u * 4) << "v6 took ~" << 128 * 11 + 64 * 4;
}

// Vector stores (16 bytes) that change a few bytes of their slot: version 8
// XORs them with the previous 16 bytes at their offset (1 + k bytes);
// version 6 kept them whole (2 + 16). Then a fill of 2-byte values at a
// stride (the same-data stride form after 2-byte XOR forms, which version 6
// wrote but could not decode).
TEST(AccessEntryTest, VectorStoresAndTwoByteFillsRoundTrip) {
  AccessListBuilder list(64, 128, false, {});
  std::vector<Input> in;
  for (std::uint64_t i = 0; i < 128; ++i) {
    std::vector<std::uint8_t> v(16, 0xa5);
    v[0] = static_cast<std::uint8_t>(i / 4);
    v[1] = static_cast<std::uint8_t>(i % 3);
    in.push_back({3 * i, static_cast<std::uint32_t>(0x400 + 16 * (i % 4)), v});
  }
  for (std::uint64_t i = 0; i < 100; ++i) {
    in.push_back({400 + i, static_cast<std::uint32_t>(0x800 + 2 * i), Le(1, 2)});
  }
  for (const Input& x : in) {
    list.Add(x.event, 7, x.offset, x.data, std::nullopt, 0, x.data.size());
  }
  const std::uint64_t bytes = ExpectRoundTrip(list, in, false);
  EXPECT_LE(bytes, 128u * 7 + 100 * 2 + 16) << "v6 took ~" << 128 * 21;
}

// Two threads' reads of a counter and a flag in turn (tests/e2e/test_bap.py):
// the flag's XOR forms store nothing, the counter's one byte.
TEST(AccessEntryTest, AlternatingSlotsRoundTrip) {
  AccessListBuilder list(64, 128, false, {});
  std::vector<Input> in;
  for (std::uint64_t i = 0; i < 10; ++i) {
    in.push_back(
        {4 * i, static_cast<std::uint32_t>(8 * (i % 2)), Le(i % 2 ? 0x1234 : 10 + i / 2, 8)});
  }
  for (const Input& x : in) {
    list.Add(x.event, 7, x.offset, x.data, std::nullopt, 0, x.data.size());
  }
  ExpectRoundTrip(list, in, false);
}

// Data the XOR form cannot shorten (random, other lengths, pieces of split
// accesses), beside short data, in blocks longer than kXorEntries (entries
// past it are never XOR-coded) and kRepeatWindow: every entry decodes back.
TEST(AccessEntryTest, MixedDataAndLongBlocksRoundTrip) {
  for (const std::uint32_t block_entries : {3u, 64u, 100u, 300u}) {
    SCOPED_TRACE(block_entries);
    AccessListBuilder list(block_entries, 128, false, {});
    std::vector<Input> in;
    std::mt19937_64 rng(block_entries);
    std::uint64_t event = 10;
    for (int i = 0; i < 1000; ++i) {
      event += rng() % 4 == 0 ? rng() % 100000 : i % 3;
      const std::uint32_t n = std::vector<std::uint32_t>{1, 2, 4, 8, 3, 16, 2, 8}[rng() % 8];
      const std::uint64_t v = rng() % 3 == 0   ? rng()
                              : rng() % 3 == 0 ? ~(rng() % 300)
                                               : rng() % 300;
      in.push_back(
          {event, static_cast<std::uint32_t>(8 * (i % 7) + (rng() % 50 == 0 ? 3 : 0)),
           n <= 8 ? Le(v, n) : std::vector<std::uint8_t>(n, static_cast<std::uint8_t>(i))});
    }
    for (const Input& x : in) {
      const bool split = x.data.size() == 3;  // a piece of a longer access
      list.Add(x.event, 7, x.offset, x.data, std::nullopt, split ? 5 : 0,
               split ? 8 + x.data.size() : x.data.size());
    }
    ExpectRoundTrip(list, in, false);
  }
}

// A loop's reads of a page repeat with its period: once the page has 128
// entries (the builder's table of recent entries) and after a block's first
// period, each entry is one byte (the repeat form). Version 5: 3 bytes each.
TEST(AccessEntryTest, PeriodicEntriesAreRepeatForms) {
  AccessListBuilder list(64, 128, false, {});
  list.set_without_data();
  std::vector<Input> in;
  const std::uint32_t offsets[5] = {0x10, 0x18, 0x10, 0x20, 0x18};
  const std::uint32_t lengths[5] = {8, 4, 8, 4, 8};
  const std::uint64_t deltas[5] = {1, 2, 1, 3, 2};
  std::uint64_t event = 0;
  for (int i = 0; i < 640; ++i) {
    event += deltas[i % 5];
    in.push_back({event, offsets[i % 5], std::vector<std::uint8_t>(lengths[i % 5])});
  }
  for (const Input& x : in) {
    list.Add(x.event, 3, x.offset, x.data, std::nullopt, 0, x.data.size());
  }
  const std::uint64_t bytes = ExpectRoundTrip(list, in, true);
  EXPECT_LE(bytes, 640u + 128 * 2 + 10 * 5 * 2) << "v5 took " << 640 * 3;
}

// An array filled with one byte value at a stride (a sieve): after the
// block's first two entries, each is one byte (a stride form with the
// previous data). Version 5: 4 bytes each.
TEST(AccessEntryTest, StridedFillsAreStrideForms) {
  AccessListBuilder list(64, 128, false, {});
  std::vector<Input> in;
  for (std::uint64_t i = 0; i < 512; ++i) {
    in.push_back({5 * i, static_cast<std::uint32_t>(7 * i % kPageSize), {1}});
  }
  for (int i = 0; i < 64; ++i) {  // a stride with changing data and a gap
    in.push_back({3000 + 4 * static_cast<std::uint64_t>(i), static_cast<std::uint32_t>(8 * i),
                  Le(0x1000 + 3 * static_cast<std::uint64_t>(i), 4)});
  }
  for (const Input& x : in) {
    list.Add(x.event, 9, x.offset, x.data, std::nullopt, 0, x.data.size());
  }
  const std::uint64_t bytes = ExpectRoundTrip(list, in, false);
  EXPECT_LE(bytes, 512u + 8 * 2 * 4 + 64 * 3 + 8) << "v5 took " << 512 * 4 + 64 * 7;
}

// Hand-made entries the builder never writes: a repeat of an entry before
// the block, an XOR form past kXorEntries, a repeat further than the window
// and XOR data cut by the block's end decode as empty, as does all after.
TEST(AccessEntryTest, CraftedFormsOutsideTheirRangeAreEmpty) {
  auto decode = [](const std::vector<std::uint8_t>& bytes, std::uint32_t entries) {
    EntryDecoder d(bytes.data(), bytes.data() + bytes.size(), 0);
    std::vector<std::uint32_t> lengths;
    for (std::uint32_t i = 0; i < entries; ++i) lengths.push_back(d.Next().length);
    return lengths;
  };
  using L = std::vector<std::uint32_t>;
  // Repeat of the entry 1 back, first in the block.
  EXPECT_EQ(decode({0x01, 0x00, 0x01, 0x10}, 2), (L{0, 0}));
  // A 1-byte raw entry (delta 0, offset 0, code 1), a repeat of it, then a
  // repeat of the entry 3 back: before the block.
  EXPECT_EQ(decode({0x00, 0x00, 0x10, 0xaa, 0x01, 0xbb, 0x05, 0xcc}, 3), (L{1, 1, 0}));
  // An XOR form of 8 bytes with 1 stored (code 1): base 0 ^ 0x2a.
  {
    const std::vector<std::uint8_t> bytes = {0x02, 0x00, 0x10, 0x2a, 0x02, 0x00, 0x10};
    EntryDecoder d(bytes.data(), bytes.data() + bytes.size(), 0);
    const AccessEntry e = d.Next();
    ASSERT_EQ(e.length, 8u);
    EXPECT_TRUE(e.decoded);
    std::uint64_t v;
    std::memcpy(&v, e.data, 8);
    EXPECT_EQ(v, 0x2au);
    EXPECT_EQ(d.Next().length, 0u);  // its stored byte is past the end
  }
  // Version 8: an XOR form's base is the previous data at its offset (0x10:
  // 0x1111), not the previous 8-byte data (0x20: 0x2222), when the block
  // has one; at an offset without one (0x30), the previous 8-byte data
  // (0x1110, just decoded).
  {
    const std::vector<std::uint8_t> bytes = {
        0x00, 0x10, 0x80, 0x11, 0x11, 0, 0, 0, 0, 0, 0,  // 0x10: 0x1111
        0x00, 0x20, 0x80, 0x22, 0x22, 0, 0, 0, 0, 0, 0,  // 0x20: 0x2222
        0x02, 0x10, 0x10, 0x01,                          // 0x10: XOR 0x01
        0x02, 0x30, 0x10, 0x04};                         // 0x30: XOR 0x04
    EntryDecoder d(bytes.data(), bytes.data() + bytes.size(), 0);
    std::vector<std::uint64_t> got;
    for (int i = 0; i < 4; ++i) {
      const AccessEntry e = d.Next();
      ASSERT_EQ(e.length, 8u) << i;
      std::uint64_t v;
      std::memcpy(&v, e.data, 8);
      got.push_back(v);
    }
    EXPECT_EQ(got, (std::vector<std::uint64_t>{0x1111, 0x2222, 0x1110, 0x1114}));
  }
  // Version 8's 16-byte XOR form (code 14, then k): base 0 ^ 0x0201; k = 16
  // (never written: the data inline is shorter) and code 15 are invalid.
  {
    const std::vector<std::uint8_t> bytes = {0x02, 0x00, 0xe0, 0x02, 0x01, 0x02};
    EntryDecoder d(bytes.data(), bytes.data() + bytes.size(), 0);
    const AccessEntry e = d.Next();
    ASSERT_EQ(e.length, 16u);
    std::uint64_t v[2];
    std::memcpy(v, e.data, 16);
    EXPECT_EQ(v[0], 0x0201u);
    EXPECT_EQ(v[1], 0u);
  }
  std::vector<std::uint8_t> k16 = {0x02, 0x00, 0xe0, 16};
  k16.resize(k16.size() + 16, 0x11);
  EXPECT_EQ(decode(k16, 1), (L{0}));
  EXPECT_EQ(decode({0x02, 0x00, 0xf0, 0x00, 0x00}, 1), (L{0}));
  // 64 one-byte entries, then an XOR form (entry 64: past kXorEntries).
  std::vector<std::uint8_t> long_block;
  for (int i = 0; i < 64; ++i) long_block.insert(long_block.end(), {0x00, 0x00, 0x10, 0x01});
  std::vector<std::uint8_t> bytes = long_block;
  bytes.insert(bytes.end(), {0x02, 0x00, 0x10, 0x2a});
  L want(64, 1);
  want.push_back(0);
  EXPECT_EQ(decode(bytes, 65), want);
  // Entry 64 repeats entry 16: 48 back is in the window (v = 47 << 1 | 1).
  bytes = long_block;
  bytes.insert(bytes.end(), {std::uint8_t((kRepeatWindow - 1) << 1 | 1), 0x05});
  want.back() = 1;
  EXPECT_EQ(decode(bytes, 65), want);
  // v >> 1 past the stride forms: invalid.
  bytes = long_block;
  bytes.insert(bytes.end(), {std::uint8_t((kStrideForm + 2) << 1 | 1), 0x05});
  want.back() = 0;
  EXPECT_EQ(decode(bytes, 65), want);
  // Stride forms: entries at 0x10 and 0x14 (1 byte, event delta 2), then
  // one at 0x18 with its byte, then one at 0x1c with the same byte. A
  // stride form as the block's second entry is invalid.
  {
    const std::uint8_t stride = kStrideForm << 1 | 1, same = (kStrideForm + 1) << 1 | 1;
    const std::vector<std::uint8_t> fill = {0x08, 0x10, 0x10,   0xaa, 0x08, 0x14,
                                            0x10, 0xbb, stride, 0xcc, same};
    EntryDecoder d(fill.data(), fill.data() + fill.size(), 100);
    std::vector<std::pair<std::uint32_t, std::uint8_t>> got;
    for (int i = 0; i < 4; ++i) {
      const AccessEntry e = d.Next();
      ASSERT_EQ(e.length, 1u) << i;
      EXPECT_EQ(e.event, 102u + 2 * i);
      got.emplace_back(e.offset, e.data[0]);
    }
    using G = std::vector<std::pair<std::uint32_t, std::uint8_t>>;
    EXPECT_EQ(got, (G{{0x10, 0xaa}, {0x14, 0xbb}, {0x18, 0xcc}, {0x1c, 0xcc}}));
    EXPECT_EQ(decode({0x08, 0x10, 0x10, 0xaa, stride, 0xbb}, 2), (L{1, 0}));
  }
}

// A copied-data trace (as usercorn's) of a loop on a stack page: pointers,
// counters, random words, 2-byte stores, writes across the page's end.
// Memory at every position and the last write of each slot answer like a
// replay, with one segment and many, blocks of 64 and of 100 entries.
testing::FakeTrace StackLoop() {
  const ArchDescription& arch = X86_64();
  testing::FakeTrace t;
  t.reader_copies_data = true;
  RegisterFile regs(arch);
  regs.SetU64(arch.pc(), 0x401000);
  t.initial_registers.emplace_back(ThreadId{1}, regs);
  std::mt19937_64 rng(5);
  constexpr Address kStack = 0x7ffd00010000;
  for (std::uint64_t j = 0; j < 700; ++j) {
    auto event = [&](Address a, std::vector<std::uint8_t> data) {
      testing::FakeEvent e;
      e.thread = ThreadId{1};
      e.writes.push_back({a, std::move(data)});
      t.events.push_back(std::move(e));
    };
    event(kStack + 0x100 + 8 * (j % 3), Le(0x401000 + 13 * (j % 50), 8));
    const auto counter = static_cast<std::int64_t>(j);
    event(kStack + 0x120, Le(static_cast<std::uint64_t>(j % 11 == 0 ? -counter : counter), 4));
    event(kStack + 0x128 + 8 * (j % 4), Le(rng(), 8));
    event(kStack + 0x200 + (j % 5), Le(kStack + 8 * j, 8));
    event(kStack + 0x300, Le(j & 0xff, 2));
    if (j % 40 == 0) event(kStack + 0xffc, Le(0x1122334455667788ull + j, 8));
  }
  return t;
}

TEST(AccessEntryTest, CopiedDataTraceAnswersLikeAReplay) {
  const testing::FakeTrace fake = StackLoop();
  constexpr Address kPage = 0x7ffd00010000;
  for (const std::uint32_t block_entries : {64u, 100u}) {
    for (const std::uint64_t budget : {std::uint64_t(0), std::uint64_t(20000)}) {
      SCOPED_TRACE(std::to_string(block_entries) + " entries, budget " + std::to_string(budget));
      OpenOptions options;
      options.index_block_entries = block_entries;
      options.index_snapshot_blocks = 4;
      if (budget) options.index_memory_budget = budget;
      auto trace = testing::OpenFakeInMemory(fake, options);
      ASSERT_TRUE(trace.ok()) << trace.status().ToString();
      const TraceIndex& index = TraceIndexOf(**trace);
      const std::uint64_t n = fake.events.size();
      // The two pages replayed as p advances (-1: never written).
      std::vector<int> memory(2 * kPageSize, -1);
      std::uint64_t replayed = 0;
      for (std::uint64_t p = 0; p <= n; p += p < 200 ? 1 : 37) {
        for (; replayed < p; ++replayed) {
          for (const testing::FakeAccess& w : fake.events[replayed].writes) {
            for (std::size_t i = 0; i < w.data.size(); ++i) {
              memory[w.address - kPage + i] = w.data[i];
            }
          }
        }
        for (const Address page : {kPage, kPage + kPageSize}) {
          std::uint8_t values[kPageSize] = {}, known[kPageSize] = {};
          index.WriteState(page, page + kPageSize, 0, p, values, known);
          for (std::uint32_t i = 0; i < kPageSize; ++i) {
            const int want = memory[page - kPage + i];
            ASSERT_EQ(known[i] != 0, want >= 0) << "byte " << i << " at " << p;
            if (want >= 0) {
              ASSERT_EQ(values[i], want) << "byte " << i << " at " << p;
            }
          }
        }
        for (const Address slot : {kPage + 0x100, kPage + 0x120, kPage + 0x200, kPage + 0x300}) {
          auto hit = index.PrevAccess(kWriteList, slot, slot + 2, p, nullptr);
          ASSERT_TRUE(hit.ok());
          if (!*hit) continue;
          const testing::FakeAccess& w = fake.events[(*hit)->entry.event].writes[0];
          const std::uint64_t at = (*hit)->address() - w.address;
          ASSERT_EQ(std::vector<std::uint8_t>((*hit)->data, (*hit)->data + (*hit)->entry.length),
                    std::vector<std::uint8_t>(w.data.begin() + at,
                                              w.data.begin() + at + (*hit)->entry.length))
              << "slot " << std::hex << slot << std::dec << " before " << p;
        }
      }
    }
  }
}

}  // namespace
}  // namespace backstep::core
