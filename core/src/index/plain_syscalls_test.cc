// PlainSyscallWriter and PlainSyscalls: the index's stream of plain system
// calls round-trips, block by block, with threads that change and events
// far apart, and a parallel build's appended parts equal one writer.
#include "backstep/core/plain_syscalls.h"

#include <gtest/gtest.h>

#include <random>
#include <vector>

#include "backstep/core/event_notes.h"
#include "index/plain_syscall_writer.h"

namespace backstep::core {
namespace {

std::vector<PlainSyscall> RandomCalls(std::size_t n) {
  std::mt19937_64 rng(7);
  std::vector<PlainSyscall> calls;
  std::uint64_t event = 3, tid = 100;
  for (std::size_t i = 0; i < n; ++i) {
    if (rng() % 5 == 0) tid = 100 + rng() % 4;
    calls.push_back({event, ThreadId(tid), rng() % 3 == 0 ? rng() % 500 : 1});
    event += rng() % 7 == 0 ? 1 + (rng() >> 30) : 1 + rng() % 200;
  }
  return calls;
}

std::vector<PlainSyscall> DecodeAll(const PlainSyscalls& view) {
  std::vector<PlainSyscall> all, block;
  for (std::uint64_t b = 0; b < view.block_count(); ++b) {
    view.Decode(b, &block);
    EXPECT_EQ(view.block_first_event(b), block.front().event);
    all.insert(all.end(), block.begin(), block.end());
  }
  return all;
}

TEST(PlainSyscallsTest, RoundTripsBlockByBlock) {
  const std::vector<PlainSyscall> calls = RandomCalls(1000);
  PlainSyscallWriter writer;
  for (const PlainSyscall& call : calls) writer.Add(call);
  const PlainSyscalls view = writer.View();
  EXPECT_EQ(view.size(), 1000u);
  EXPECT_EQ(view.block_count(), 4u);
  EXPECT_EQ(DecodeAll(view), calls);
  // ~3 bytes a call: the event delta, the number, a thread now and then.
  EXPECT_LT(writer.stream().size(), 5u * calls.size());
  // BlockAt: the last block starting at or before the event.
  EXPECT_EQ(view.BlockAt(0), 0u);
  EXPECT_EQ(view.BlockAt(calls[255].event), 0u);
  EXPECT_EQ(view.BlockAt(calls[256].event), 1u);
  EXPECT_EQ(view.BlockAt(calls[256].event - 1), 0u);
  EXPECT_EQ(view.BlockAt(calls.back().event + 1000), 3u);
}

TEST(PlainSyscallsTest, AppendedPartsEqualOneWriter) {
  const std::vector<PlainSyscall> calls = RandomCalls(900);
  PlainSyscallWriter whole, merged;
  for (const PlainSyscall& call : calls) whole.Add(call);
  // Parts cut anywhere, as a parallel build's are.
  const std::size_t cuts[] = {0, 1, 300, 555, 900};
  for (std::size_t p = 0; p + 1 < std::size(cuts); ++p) {
    PlainSyscallWriter part;
    for (std::size_t i = cuts[p]; i < cuts[p + 1]; ++i) part.Add(calls[i]);
    merged.Append(part);
  }
  EXPECT_EQ(merged.stream(), whole.stream());
  ASSERT_EQ(merged.skips().size(), whole.skips().size());
  for (std::size_t b = 0; b < whole.skips().size(); ++b) {
    EXPECT_EQ(merged.skips()[b].first_event, whole.skips()[b].first_event);
    EXPECT_EQ(merged.skips()[b].tid, whole.skips()[b].tid);
    EXPECT_EQ(merged.skips()[b].offset, whole.skips()[b].offset);
  }
}

// Which events the stream takes: one system call that returns and changes
// no mapping; the others stay noted events with their descriptions.
TEST(PlainSyscallsTest, PlainSyscallNumberTakesOnlyPlainCalls) {
  EXPECT_EQ(PlainSyscallNumber(EventKind::kSyscall, "syscall 1(0x1, 0x2, 0x3) = 0x3"), 1u);
  EXPECT_EQ(PlainSyscallNumber(EventKind::kInstruction, "syscall 0(0x0) = 0x10"), 0u);
  EXPECT_FALSE(PlainSyscallNumber(EventKind::kSyscall, ""));
  EXPECT_FALSE(PlainSyscallNumber(EventKind::kSyscall, "page fault"));
  EXPECT_FALSE(PlainSyscallNumber(EventKind::kSyscall, "syscall 60(0x3) = 0x0"));   // exit
  EXPECT_FALSE(PlainSyscallNumber(EventKind::kSyscall, "syscall 231(0x0) = 0x0"));  // exit_group
  EXPECT_FALSE(PlainSyscallNumber(
      EventKind::kSyscall, "syscall 9(0x0, 0x1000) = 0x0; map 0x70000000+0x1000 rw- [heap]"));
  EXPECT_FALSE(PlainSyscallNumber(EventKind::kInterrupt, "signal 11; syscall 1(0x1) = 0x1"));
  EXPECT_FALSE(PlainSyscallNumber(EventKind::kSyscall, "syscall 59(0x0) = 0x0; exec 2f62696e"));
}

}  // namespace
}  // namespace backstep::core
