// A usercorn trace behind the index and the cursor: the index resumes the
// reader from its keyframes (ReaderPositions in the middle of frames), and
// every position must show the registers and memory that a sequential
// replay of the reader gives.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <random>

#include "backstep/core/cursor.h"
#include "backstep/core/search.h"
#include "backstep/core/trace.h"
#include "formats/usercorn/usercorn_reader.h"
#include "formats/usercorn/usercorn_writer.h"
#include "testing/usercorn_fixtures.h"

namespace backstep::core {
namespace {

TEST(UsercornTraceTest, CursorMatchesSequentialReplayEverywhere) {
  const std::shared_ptr<const ByteSource> source = MemorySource(
      testing::GeneratedUsercornTrace(7, 1500, SnappyChunkMode::kAuto, 700), "gen.ucir");
  auto make = [source]() -> Expected<std::unique_ptr<TraceReader>> {
    BACKSTEP_ASSIGN_OR_RETURN(auto r, UsercornReader::Open(source));
    return std::unique_ptr<TraceReader>(std::move(r));
  };
  OpenOptions options;
  options.keyframe_interval = 37;
  options.index_block_entries = 3;
  options.index_snapshot_blocks = 2;
  auto trace = Trace::OpenWith(make, "", options);
  ASSERT_TRUE(trace.ok()) << trace.status().ToString();
  ASSERT_EQ((*trace)->event_count(), 1501u);

  // Sequential replay: registers after each event, and a byte of the data
  // mapping that events write.
  auto reader = make();
  ASSERT_TRUE(reader.ok());
  RegisterFile regs = (*reader)->InitialRegisters().at(0).second;
  std::vector<RegisterFile> states{regs};
  std::map<Address, std::uint8_t> memory;
  std::vector<std::map<Address, std::uint8_t>> snapshots{memory};
  Event e;
  for (;;) {
    auto more = (*reader)->Next(&e);
    ASSERT_TRUE(more.ok());
    if (!*more) break;
    for (const RegisterWrite& w : e.registers) regs.Apply(w);
    for (const MemoryAccess& m : e.writes) {
      for (std::size_t i = 0; i < m.data.size(); ++i) memory[m.address + i] = m.data[i];
    }
    states.push_back(regs);
    if (states.size() % 50 == 1) snapshots.push_back(memory);
  }
  ASSERT_EQ(states.size(), 1502u);

  auto cursor = (*trace)->NewCursor();
  ASSERT_TRUE(cursor.ok());
  const ThreadId thread(1);
  for (std::uint64_t p = 1502; p-- > 0;) {  // backwards: every seek resumes from a keyframe
    ASSERT_TRUE((*cursor)->Seek(Position(p)).ok()) << p;
    auto got = (*cursor)->Registers(thread);
    ASSERT_TRUE(got.ok()) << p;
    for (RegisterId id = 0; id < X86_64().register_count(); ++id) {
      if (X86_64().info(id).derived || !states[p].known(id)) continue;
      ASSERT_TRUE((*got)->known(id)) << p << " " << X86_64().info(id).name;
      const auto a = (*got)->bytes(id), b = states[p].bytes(id);
      ASSERT_TRUE(std::equal(a.begin(), a.end(), b.begin(), b.end()))
          << p << " " << X86_64().info(id).name;
    }
    if (p % 50 != 0) continue;
    for (const auto& [address, value] : snapshots[p / 50]) {
      std::uint8_t byte = 0, known = 0;
      ASSERT_TRUE((*cursor)->ReadMemory(address, {&byte, 1}, {&known, 1}).ok());
      ASSERT_EQ(known, 1) << p << " " << address;
      ASSERT_EQ(byte, value) << p << " " << address;
    }
  }
}

// Long writes of a compressed trace are referenced by their event in the
// index (kEntryEvent), not copied, and read back as the sequential replay
// gives them: whole pages at every position, across pages and chunks, under
// later small writes and page snapshots; LastWrite and History hand out the
// whole access.
TEST(UsercornTraceTest, LongWritesAreReferencedNotCopied) {
  std::mt19937_64 rng(5);
  UsercornWriterOptions o;
  o.chunk_mode = SnappyChunkMode::kCompressed;
  o.chunk_size = 1000;  // a long write spans many chunks
  auto w = UsercornWriter::CreateMemory(o);
  constexpr Address kData = 0x600000, kDataSize = 0x4000;
  const UsercornMapping maps[] = {
      {0x400000, 0x2000, kProtRead | kProtExec, 0, 0x2000, "", "/bin/gen"},
      {kData, kDataSize, kProtRead | kProtWrite, 0, 0, "data", ""}};
  auto zero = [](const UsercornMapping& m, std::vector<std::uint8_t>* data) {
    data->assign(m.size, 0);
    return Status::Ok();
  };
  ASSERT_TRUE(w->Begin(0, {}, maps, zero, 0x400000).ok());
  std::vector<std::vector<std::uint8_t>> long_writes;
  for (std::size_t i = 0; i < 120; ++i) {
    std::vector<std::uint8_t> bytes(i == 3 ? 10000 : i == 60 ? 5000 : 1 + rng() % 16);
    for (auto& b : bytes) b = rng() & 0xff;
    const Address at = i == 3 ? kData + 0x10 : i == 60 ? kData + 0x1800 : kData + rng() % 0x3f00;
    if (bytes.size() > 100) long_writes.push_back(bytes);
    const MemoryAccess write{at, bytes};
    UsercornInstruction insn;
    insn.pc = 0x400000 + 4 * i;
    insn.size = 4;
    insn.writes = std::span<const MemoryAccess>(&write, 1);
    w->AppendInstruction(insn);
  }
  w->AppendExit();
  ASSERT_TRUE(w->Finish().ok());
  const auto source = MemorySource(w->TakeBytes(), "long.ucir");
  auto make = [source]() -> Expected<std::unique_ptr<TraceReader>> {
    BACKSTEP_ASSIGN_OR_RETURN(auto r, UsercornReader::Open(source));
    return std::unique_ptr<TraceReader>(std::move(r));
  };
  OpenOptions options;
  options.keyframe_interval = 16;
  options.index_block_entries = 3;  // snapshots rebuild the long writes' pages
  options.index_snapshot_blocks = 2;
  auto trace = Trace::OpenWith(make, "", options);
  ASSERT_TRUE(trace.ok()) << trace.status().ToString();
  // Copied, the two long writes alone would be 15,000 bytes of index.
  auto default_trace = Trace::OpenWith(make, "", OpenOptions());
  ASSERT_TRUE(default_trace.ok()) << default_trace.status().ToString();
  EXPECT_LT((*default_trace)->index_status().size_bytes, 15000u);

  auto reader = make();
  ASSERT_TRUE(reader.ok());
  std::vector<std::uint8_t> memory(kDataSize, 0);
  std::vector<std::vector<std::uint8_t>> states{memory};
  Event e;
  for (;;) {
    auto more = (*reader)->Next(&e);
    ASSERT_TRUE(more.ok());
    if (!*more) break;
    for (const MemoryAccess& m : e.writes) {
      std::copy(m.data.begin(), m.data.end(), memory.begin() + (m.address - kData));
    }
    states.push_back(memory);
  }
  auto cursor = (*trace)->NewCursor();
  ASSERT_TRUE(cursor.ok());
  std::vector<std::uint8_t> got(kDataSize), known(kDataSize);
  for (std::uint64_t p = states.size(); p-- > 0;) {
    ASSERT_TRUE((*cursor)->Seek(Position(p)).ok()) << p;
    ASSERT_TRUE((*cursor)->ReadMemory(kData, got, known).ok()) << p;
    ASSERT_EQ(std::count(known.begin(), known.end(), 1), std::ptrdiff_t(kDataSize)) << p;
    ASSERT_EQ(got, states[p]) << p;
  }
  auto last = LastWrite(**trace, kData + 0x1800 + 4999, 1, Position(62));
  ASSERT_TRUE(last.ok() && last->has_value());
  EXPECT_EQ((*last)->data, long_writes[1]);
  auto history = History(**trace, kData + 0x2000, 1, Position(0), Position(10), 10);
  ASSERT_TRUE(history.ok());
  ASSERT_EQ(history->size(), 1u);
  EXPECT_EQ(history->front().data, long_writes[0]);
}

// usercorn's MEM_READ holds no value: the read list of such a trace stores
// no data bytes (kDirReadsWithoutData), only where and when, and a read
// still reports the memory of its position.
TEST(UsercornTraceTest, ReadsWithoutValuesStoreNoData) {
  constexpr Address kData = 0x600000;
  auto make_trace = [&](bool reads) {
    UsercornWriterOptions o;
    o.declare_reads = reads;
    auto w = UsercornWriter::CreateMemory(o);
    const UsercornMapping maps[] = {
        {0x400000, 0x2000, kProtRead | kProtExec, 0, 0x2000, "", "/bin/gen"},
        {kData, 0x1000, kProtRead | kProtWrite, 0, 0, "data", ""}};
    auto zero = [](const UsercornMapping& m, std::vector<std::uint8_t>* data) {
      data->assign(m.size, 0);
      return Status::Ok();
    };
    EXPECT_TRUE(w->Begin(0, {}, maps, zero, 0x400000).ok());
    const std::vector<std::uint8_t> value(16, 0x5a);
    for (std::size_t i = 0; i < 200; ++i) {
      const MemoryAccess write{kData + 16 * (i % 200), value};
      const MemoryAccess read[] = {{kData + 16 * ((i * 7) % 200), value},
                                   {kData + 16 * ((i * 3) % 200), value}};
      UsercornInstruction insn;
      insn.pc = 0x400000 + 4 * i;
      insn.size = 4;
      insn.writes = std::span<const MemoryAccess>(&write, 1);
      if (reads) insn.reads = read;
      w->AppendInstruction(insn);
    }
    w->AppendExit();
    EXPECT_TRUE(w->Finish().ok());
    const auto source = MemorySource(w->TakeBytes(), "reads.ucir");
    return Trace::OpenWith(
        [source]() -> Expected<std::unique_ptr<TraceReader>> {
          BACKSTEP_ASSIGN_OR_RETURN(auto r, UsercornReader::Open(source));
          return std::unique_ptr<TraceReader>(std::move(r));
        },
        "", OpenOptions());
  };
  auto with_reads = make_trace(true), without = make_trace(false);
  ASSERT_TRUE(with_reads.ok() && without.ok());
  ASSERT_TRUE((*with_reads)->header().records_reads);
  // 400 reads of 16 bytes: 6,400 bytes if their placeholders were stored.
  EXPECT_LT((*with_reads)->index_status().size_bytes,
            (*without)->index_status().size_bytes + 400 * 8);
  // Reads of kData + 16 * 30 see the memory of their position: zero before
  // event 30 writes it, 0x5a after.
  auto history = History(**with_reads, kData + 16 * 30, 16, Position(0), Position(40), 10);
  ASSERT_TRUE(history.ok());
  bool read_seen = false, write_seen = false;
  for (const Access& a : *history) {
    if (a.is_write) {
      write_seen = true;
      EXPECT_EQ(a.event, 30u);
      EXPECT_EQ(a.data, std::vector<std::uint8_t>(16, 0x5a));
    } else {
      read_seen = true;
      const std::uint8_t expected = a.event > 30 ? 0x5a : 0;
      EXPECT_EQ(a.data, std::vector<std::uint8_t>(16, expected)) << a.event;
    }
  }
  EXPECT_TRUE(read_seen && write_seen) << history->size();
}

}  // namespace
}  // namespace backstep::core
