// A usercorn trace behind the index and the cursor: the index resumes the
// reader from its keyframes (ReaderPositions in the middle of frames), and
// every position must show the registers and memory that a sequential
// replay of the reader gives.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>

#include "backstep/core/cursor.h"
#include "backstep/core/trace.h"
#include "formats/usercorn/usercorn_reader.h"
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

}  // namespace
}  // namespace backstep::core
