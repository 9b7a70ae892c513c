// TraceTarget::RangeStep (vCont;r) over a generated REVEN trace, against a
// plain cursor stepped one event at a time: where a range step lands, and
// that a breakpoint inside the range, an empty range and an interrupt stop
// it as gdb expects.
#include <gtest/gtest.h>

#include <atomic>
#include <random>

#include "backstep/core/cursor.h"
#include "trace_target/trace_target.h"
#include "trace_target/trace_target_test_util.h"

namespace backstep::gdbstub {
namespace {

using core::Position;

class RangeStepTest : public ::testing::Test {
 protected:
  void SetUp() override {
    fx_ = &testing::SharedReven();
    ASSERT_TRUE(fx_->trace);
    auto target = TraceTarget::Create(fx_->trace, {});
    ASSERT_TRUE(target.ok()) << target.status().ToString();
    target_ = std::move(*target);
    auto cursor = fx_->trace->NewCursor();
    ASSERT_TRUE(cursor.ok());
    cursor_ = std::move(*cursor);
  }
  void GoTo(std::uint64_t p) {
    target_->armed_moves().ArmGoto(Position(p));
    ASSERT_TRUE(target_->Resume(ResumeKind::kStep, std::nullopt, nullptr).ok());
    ASSERT_EQ(target_->position(), Position(p));
  }
  std::uint64_t PcAt(std::uint64_t p) {
    EXPECT_TRUE(cursor_->Seek(Position(p)).ok());
    return cursor_->Pc(cursor_->current_thread()).value_or(0);
  }
  // The first position after p whose pc leaves [lo, hi), stepping one
  // event at a time (the trace has one thread).
  std::uint64_t FirstOutside(std::uint64_t p, std::uint64_t lo, std::uint64_t hi) {
    std::uint64_t q = p + 1;
    while (true) {
      const std::uint64_t pc = PcAt(q);
      if (pc < lo || pc >= hi) return q;
      ++q;
    }
  }

  const testing::RevenFixture* fx_ = nullptr;
  std::unique_ptr<TraceTarget> target_;
  std::unique_ptr<core::Cursor> cursor_;
};

TEST_F(RangeStepTest, StopsAtTheFirstPcOutsideTheRange) {
  const std::uint64_t n = fx_->trace->event_count();
  std::mt19937_64 rng(7);
  int long_ranges = 0;
  for (int i = 0; i < 40; ++i) {
    const std::uint64_t p = n / 8 + rng() % (n / 2);
    const std::uint64_t pc = PcAt(p);
    const std::uint64_t lo = pc - rng() % 0x40, hi = pc + 1 + rng() % 0x80;
    const std::uint64_t want = FirstOutside(p, lo, hi);
    GoTo(p);
    auto stop = target_->RangeStep(lo, hi, std::nullopt, nullptr);
    ASSERT_TRUE(stop.ok()) << stop.status().ToString();
    EXPECT_EQ(*stop, StopReason(DoneStep{})) << "from " << p;
    EXPECT_EQ(target_->position(), Position(want)) << "from " << p;
    if (want > p + 1) ++long_ranges;
  }
  EXPECT_GT(long_ranges, 5) << "the ranges must cover more than one instruction";
}

TEST_F(RangeStepTest, BreakpointInTheRangeStopsIt) {
  const std::uint64_t n = fx_->trace->event_count();
  // A stretch of at least 3 steps inside a range, with a pc to break on.
  for (std::uint64_t p = n / 4; p < n / 2; p += 97) {
    const std::uint64_t pc = PcAt(p);
    const std::uint64_t want = FirstOutside(p, pc - 0x100, pc + 0x100);
    if (want < p + 3) continue;
    std::uint64_t hit = p + 1;
    while (hit < want && PcAt(hit) == pc) ++hit;  // not the start's pc
    if (hit + 1 >= want) continue;
    const std::uint64_t bp = PcAt(hit);
    // The first position after p at bp (a loop may reach it earlier).
    std::uint64_t first = p + 1;
    while (PcAt(first) != bp) ++first;
    GoTo(p);
    ASSERT_TRUE(target_->breakpoints()->InsertBreakpoint(BreakpointType::kSoftware, bp, 1).ok());
    auto stop = target_->RangeStep(pc - 0x100, pc + 0x100, std::nullopt, nullptr);
    ASSERT_TRUE(target_->breakpoints()->RemoveBreakpoint(BreakpointType::kSoftware, bp, 1).ok());
    ASSERT_TRUE(stop.ok());
    EXPECT_EQ(*stop, StopReason(SwBreak{}));
    EXPECT_EQ(target_->position(), Position(first));
    return;
  }
  FAIL() << "no stretch of steps inside a range in the fixture";
}

TEST_F(RangeStepTest, EmptyRangeIsOneStepAndInterruptStops) {
  const std::uint64_t p = fx_->trace->event_count() / 3;
  GoTo(p);
  const std::uint64_t pc = PcAt(p);
  auto stop = target_->RangeStep(pc, pc, std::nullopt, nullptr);
  ASSERT_TRUE(stop.ok());
  EXPECT_EQ(*stop, StopReason(DoneStep{}));
  EXPECT_EQ(target_->position(), Position(p + 1));
  // A range that holds every pc runs until interrupted: one step here.
  std::atomic<bool> interrupt{true};
  stop = target_->RangeStep(0, ~std::uint64_t{0}, std::nullopt, &interrupt);
  ASSERT_TRUE(stop.ok());
  EXPECT_EQ(*stop, StopReason(Interrupted{}));
  EXPECT_EQ(target_->position(), Position(p + 2));
}

TEST_F(RangeStepTest, StopsAtTheEndOfHistory) {
  const std::uint64_t n = fx_->trace->event_count();
  GoTo(n - 5);
  auto stop = target_->RangeStep(0, ~std::uint64_t{0}, std::nullopt, nullptr);
  ASSERT_TRUE(stop.ok());
  EXPECT_EQ(*stop, StopReason(HistoryEdge{HistoryEdge::Side::kEnd}));
}

}  // namespace
}  // namespace backstep::gdbstub
