// Cross-checks of the pc queries and LastRegisterWrite against a naive scan
// of generated traces (several segments, short keyframe intervals, several
// threads, register clears).
#include <gtest/gtest.h>

#include <random>

#include "backstep/core/pc_queries.h"
#include "backstep/core/register_queries.h"
#include "backstep/core/trace.h"
#include "backstep/testing/fake_trace.h"
#include "backstep/testing/fake_trace_generator.h"
#include "testing/trace_oracle.h"

namespace backstep::core {
namespace {

struct Opened {
  testing::FakeTrace fake;
  std::shared_ptr<Trace> trace;
};

Opened Open(int threads, bool clears) {
  testing::FakeTraceOptions gen;
  gen.seed = 17 + static_cast<std::uint64_t>(threads);
  gen.events = 3000;
  gen.threads = threads;
  gen.clears = clears;
  Opened o{testing::GenerateFakeTrace(gen), nullptr};
  OpenOptions options;
  options.keyframe_interval = 64;
  options.index_memory_budget = 16 * 1024;  // several segments
  auto t = testing::OpenFakeInMemory(o.fake, options);
  EXPECT_TRUE(t.ok()) << t.status().ToString();
  if (t.ok()) o.trace = *t;
  return o;
}

class Queries : public ::testing::TestWithParam<std::pair<int, bool>> {};

TEST_P(Queries, PcQueriesEqualANaiveScan) {
  Opened o = Open(GetParam().first, GetParam().second);
  ASSERT_TRUE(o.trace);
  testing::TraceOracle oracle(o.fake);
  const std::uint64_t n = oracle.event_count();
  std::mt19937_64 rng(5);
  for (Address pc : testing::FakePcPool()) {
    for (int k = 0; k < 30; ++k) {
      std::uint64_t a = rng() % (n + 1), b = rng() % (n + 1);
      if (a > b) std::swap(a, b);
      std::uint64_t naive = 0;
      std::optional<std::uint64_t> first, last;
      for (std::uint64_t q = a; q < b; ++q) {
        if (oracle.pc_of(q) == pc) {
          ++naive;
          if (!first) first = q;
          last = q;
        }
      }
      EXPECT_EQ(CountAtPc(*o.trace, pc, Position(a), Position(b)), naive)
          << "pc " << pc << " [" << a << ", " << b << ")";
      auto next = NextAtPc(*o.trace, pc, Position(a));
      if (first) {
        ASSERT_TRUE(next.has_value());
        EXPECT_EQ(next->value, *first);
      } else if (next) {
        EXPECT_GE(next->value, b);
      }
      auto prev = PrevAtPc(*o.trace, pc, Position(b));
      if (last) {
        ASSERT_TRUE(prev.has_value());
        EXPECT_EQ(prev->value, *last);
      } else if (prev) {
        EXPECT_LT(prev->value, a);
      }
    }
    EXPECT_EQ(CountAtPc(*o.trace, pc, Position(0), Position::Max()),
              CountAtPc(*o.trace, pc, Position(0), Position(n)));
  }
}

TEST_P(Queries, LastRegisterWriteEqualsANaiveScan) {
  Opened o = Open(GetParam().first, GetParam().second);
  ASSERT_TRUE(o.trace);
  const auto& events = o.fake.events;
  const std::uint64_t n = events.size();
  const ArchDescription& arch = o.trace->arch();
  std::mt19937_64 rng(9);
  const std::vector<std::string> names = {"rax", "rbx", "rsp", "rip", "eflags", "xmm0"};
  for (int k = 0; k < 200; ++k) {
    const std::uint64_t before = rng() % (n + 1);
    const ThreadId thread = events[rng() % n].thread;
    std::vector<RegisterId> regs = {*arch.Find(names[rng() % names.size()])};
    if (k % 3 == 0) regs.push_back(*arch.Find(names[rng() % names.size()]));
    const std::uint64_t bound = k % 4 == 0 ? 100 : kDefaultRegisterScanEvents;
    // Naive: the last event of the thread below `before` (within the bound)
    // that clears or writes one of the registers; a write wins in its event.
    RegisterWriteSearch naive;
    const std::uint64_t floor = bound >= before ? 0 : before - bound;
    for (std::uint64_t e = before; e-- > floor;) {
      if (events[e].thread != thread) continue;
      bool writes = false;
      for (const RegisterWrite& w : events[e].registers) {
        writes |= std::find(regs.begin(), regs.end(), w.reg) != regs.end();
      }
      if (writes) {
        naive = {RegisterWriteSearch::Result::kFound, e};
        break;
      }
      if (events[e].flags & kEventClearsRegisters) {
        naive = {RegisterWriteSearch::Result::kCleared, e};
        break;
      }
    }
    if (naive.result == RegisterWriteSearch::Result::kNone && floor > 0) {
      naive.result = RegisterWriteSearch::Result::kBeyondBound;
    }
    auto got = LastRegisterWrite(*o.trace, thread, regs, Position(before), bound);
    ASSERT_TRUE(got.ok()) << got.status().ToString();
    EXPECT_EQ(got->result, naive.result) << "before " << before << " k " << k;
    if (naive.result == RegisterWriteSearch::Result::kFound ||
        naive.result == RegisterWriteSearch::Result::kCleared) {
      EXPECT_EQ(got->event, naive.event) << "before " << before << " k " << k;
    }
  }
  EXPECT_FALSE(LastRegisterWrite(*o.trace, ThreadId(1), {}, Position(n + 1)).ok());
  std::atomic<bool> stop{true};
  auto interrupted = LastRegisterWrite(*o.trace, events[0].thread, std::vector<RegisterId>{0},
                                       Position(n), kDefaultRegisterScanEvents, &stop);
  ASSERT_FALSE(interrupted.ok());
  EXPECT_TRUE(interrupted.status().IsInterrupted());
}

INSTANTIATE_TEST_SUITE_P(Traces, Queries,
                         ::testing::Values(std::pair(1, false), std::pair(3, false),
                                           std::pair(2, true)));

}  // namespace
}  // namespace backstep::core
