// Cross-check over x64dbg traces written by our writer (the two-thread
// hand-made program, both pointer sizes): at random positions the cursor's
// registers of every thread and its memory (with value inference from
// recorded reads) equal a naive replay (testing/trace_oracle.h) of the
// reader's events, with the index built in one pass and in parallel from the
// full dumps; a read watchpoint stops in reverse where the
// naive scan says.
#include <gtest/gtest.h>

#include <filesystem>
#include <random>

#include "backstep/core/cursor.h"
#include "backstep/core/search.h"
#include "backstep/core/trace.h"
#include "backstep/testing/fake_trace.h"
#include "backstep/testing/x64dbg_fixtures.h"
#include "testing/trace_oracle.h"

namespace backstep::core {
namespace {

namespace fs = std::filesystem;

class X64dbgCrossCheck : public ::testing::TestWithParam<bool> {
 protected:
  void SetUp() override {
    char name[] = "/tmp/backstep-x64dbg-check-XXXXXX";
    dir_ = mkdtemp(name);
    testing::X64dbgProgramOptions o;
    o.instructions = 3000;
    o.seed = 9;
    o.i386 = GetParam();
    // A thread id whose block parses without it too; the .trace32 ends
    // right after a switch (x64dbg stopped recording there).
    o.thread_b = 200;
    o.end_with_switch = o.i386;
    path_ = dir_ + "/program.trace";
    ASSERT_TRUE(testing::WriteX64dbgProgram(o, path_).ok());
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::shared_ptr<Trace> Open(unsigned parts) {
    OpenOptions options;
    options.keyframe_interval = 97;
    options.index_block_entries = 4;
    options.index_snapshot_blocks = 3;
    options.index_memory_budget = 20000;
    options.index_parts = parts;
    auto trace = Trace::Open(path_, options);
    EXPECT_TRUE(trace.ok()) << trace.status().ToString();
    return trace.ok() ? *trace : nullptr;
  }

  std::string dir_, path_;
};

TEST_P(X64dbgCrossCheck, CursorMatchesNaiveReplay) {
  for (unsigned parts : {1u, 3u}) {
    SCOPED_TRACE("parts " + std::to_string(parts));
    std::shared_ptr<Trace> trace = Open(parts);
    ASSERT_TRUE(trace);
    // In parallel from the full dumps, value inference merged across the
    // parts (x64dbg_parallel_test.cc checks every query and position).
    EXPECT_EQ(trace->index_status().build_parts, parts) << trace->index_status().build_note;
    auto reader = trace->NewReader();
    ASSERT_TRUE(reader.ok());
    auto fake = testing::CaptureTrace(**reader);
    ASSERT_TRUE(fake.ok()) << fake.status().ToString();
    testing::TraceOracle oracle(*fake);
    ASSERT_EQ(trace->event_count(), fake->events.size());
    auto cursor = trace->NewCursor();
    ASSERT_TRUE(cursor.ok());
    std::mt19937_64 rng(3);
    const std::uint64_t n = trace->event_count();
    const std::vector<Address> probes = {testing::kX64dbgCounter, testing::kX64dbgStackA - 8,
                                         testing::kX64dbgStackB - 8, testing::kX64dbgCodeA,
                                         testing::kX64dbgCodeB + 3};
    std::size_t threads_seen = 0;
    for (int i = 0; i < 60; ++i) {
      const std::uint64_t p = i == 0 ? n : i == 1 ? 0 : rng() % (n + 1);
      ASSERT_TRUE((*cursor)->Seek(Position(p)).ok());
      oracle.Seek(p);
      threads_seen = std::max(threads_seen, oracle.all_threads().size());
      for (ThreadId t : oracle.all_threads()) {
        auto regs = (*cursor)->Registers(t);
        ASSERT_TRUE(regs.ok());
        ASSERT_TRUE(**regs == *oracle.Registers(t)) << "position " << p << " thread " << t.value;
      }
      for (Address a : probes) {
        std::uint8_t v[16], k[16];
        ASSERT_TRUE((*cursor)->ReadMemory(a, v, k).ok());
        for (int j = 0; j < 16; ++j) {
          const auto want = oracle.Byte(a + j);
          ASSERT_EQ(k[j] != 0, want.has_value()) << "position " << p << " address " << a + j;
          ASSERT_EQ(v[j], want.value_or(0)) << "position " << p << " address " << a + j;
        }
      }
    }
    EXPECT_EQ(threads_seen, 2u);
    const std::string index = trace->index_status().path;
    trace.reset();
    fs::remove(index);  // the next round builds again
  }
}

TEST_P(X64dbgCrossCheck, ReadWatchInReverseMatchesNaiveScan) {
  std::shared_ptr<Trace> trace = Open(1);
  ASSERT_TRUE(trace);
  auto reader = trace->NewReader();
  ASSERT_TRUE(reader.ok());
  auto fake = testing::CaptureTrace(**reader);
  ASSERT_TRUE(fake.ok());
  // The last event before the end that reads the counter (thread B's mov
  // rbx or A's mov rax / mov [counter]).
  const std::uint64_t n = trace->event_count();
  std::optional<std::uint64_t> last;
  for (std::uint64_t e = 0; e < n; ++e) {
    for (const auto& r : fake->events[e].reads) {
      if (r.address == testing::kX64dbgCounter) last = e;
    }
  }
  ASSERT_TRUE(last);
  StopCondition c;
  c.watches.push_back(Watch{testing::kX64dbgCounter, 4, WatchKind::kRead, false});
  auto stop = RunUntil(*trace, Position(n), Direction::kBackward, c);
  ASSERT_TRUE(stop.ok()) << stop.status().ToString();
  EXPECT_EQ(stop->reason, StopEvent::Reason::kWatch);
  EXPECT_EQ(stop->position.value, *last);
}

TEST_P(X64dbgCrossCheck, FullDumpsAreResumePoints) {
  // Every resume point: a reader seeked there continues exactly as the
  // reader that got there, with the registers a naive replay has there.
  std::shared_ptr<Trace> trace = Open(1);
  ASSERT_TRUE(trace);
  auto reader = trace->NewReader();
  ASSERT_TRUE(reader.ok());
  const std::vector<ResumePoint> points = (*reader)->ResumePoints();
  ASSERT_EQ(points.size(), 5u);  // blocks 512, 1024, ... 2560 of 3000
  auto fake = testing::CaptureTrace(**reader);
  ASSERT_TRUE(fake.ok());
  testing::TraceOracle oracle(*fake);
  for (const ResumePoint& point : points) {
    SCOPED_TRACE("position " + std::to_string(point.position.value));
    oracle.Seek(point.position.value);
    ASSERT_EQ(point.registers.size(), oracle.threads().size());
    for (const auto& [tid, regs] : point.registers) {
      ASSERT_TRUE(oracle.Registers(tid));
      EXPECT_TRUE(regs == *oracle.Registers(tid)) << "thread " << tid.value;
    }
    auto seeked = trace->NewReader();
    ASSERT_TRUE(seeked.ok());
    ASSERT_TRUE((*seeked)->Seek(point.reader_position).ok());
    Event e;
    for (std::uint64_t i = point.position.value; i < point.position.value + 40; ++i) {
      auto more = (*seeked)->Next(&e);
      ASSERT_TRUE(more.ok() && *more);
      const testing::FakeEvent& want = fake->events[i];
      ASSERT_EQ(e.thread, want.thread);
      ASSERT_EQ(e.kind, want.kind);
      ASSERT_EQ(e.registers.size(), want.registers.size());
      ASSERT_EQ(e.reads.size(), want.reads.size());
    }
  }
}

INSTANTIATE_TEST_SUITE_P(PointerSizes, X64dbgCrossCheck, ::testing::Values(false, true),
                         [](const auto& p) { return p.param ? "trace32" : "trace64"; });

}  // namespace
}  // namespace backstep::core
