// StopPoints: breakpoint and watchpoint bookkeeping, the stop condition it
// hands to core::RunUntil and the stop replies it makes of core's stops.
#include "trace_target/stop_points.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <vector>

#include "trace_target/trace_target_test_util.h"

namespace backstep::gdbstub {
namespace {

std::vector<core::Address> Sorted(std::vector<core::Address> v) {
  std::sort(v.begin(), v.end());
  return v;
}

core::StopEvent Stop(core::StopEvent::Reason reason, core::Address address,
                     core::WatchKind kind = core::WatchKind::kWrite) {
  core::StopEvent stop{};
  stop.reason = reason;
  stop.address = address;
  stop.watch_kind = kind;
  return stop;
}

TEST(StopPoints, EmptyConditionStopsAtNothing) {
  StopPoints points(*testing::SharedReven().trace, true);
  const core::StopCondition c = points.Condition(nullptr);
  EXPECT_TRUE(c.breakpoints.empty());
  EXPECT_TRUE(c.watches.empty());
  EXPECT_FALSE(c.thread.has_value());
  EXPECT_FALSE(points.has_watchpoints());
}

TEST(StopPoints, SoftwareAndHardwareAtOneAddressAreOneBreakpoint) {
  StopPoints points(*testing::SharedReven().trace, true);
  points.InsertBreakpoint(BreakpointType::kSoftware, 0x1000, 1);
  points.InsertBreakpoint(BreakpointType::kHardware, 0x1000, 1);
  points.InsertBreakpoint(BreakpointType::kHardware, 0x2000, 1);
  points.InsertBreakpoint(BreakpointType::kSoftware, 0x1000, 1);  // again: still one
  EXPECT_EQ(Sorted(points.Condition(nullptr).breakpoints),
            (std::vector<core::Address>{0x1000, 0x2000}));
  const auto hit = Stop(core::StopEvent::Reason::kBreakpoint, 0x1000);
  EXPECT_EQ(points.ReasonFor(hit), StopReason(SwBreak{}));
  EXPECT_EQ(points.ReasonFor(Stop(core::StopEvent::Reason::kBreakpoint, 0x2000)),
            StopReason(HwBreak{}));

  points.RemoveBreakpoint(BreakpointType::kSoftware, 0x1000, 1);
  EXPECT_EQ(points.ReasonFor(hit), StopReason(HwBreak{}));  // the Z1 one remains
  points.RemoveBreakpoint(BreakpointType::kHardware, 0x1000, 1);
  points.RemoveBreakpoint(BreakpointType::kHardware, 0x3000, 1);  // never set: no error
  EXPECT_EQ(points.Condition(nullptr).breakpoints, (std::vector<core::Address>{0x2000}));
}

TEST(StopPoints, WatchpointsByKindCountEveryInsertion) {
  StopPoints points(*testing::SharedReven().trace, true);
  ASSERT_TRUE(points.InsertWatchpoint(WatchKind::kWrite, 0x100, 8).ok());
  ASSERT_TRUE(points.InsertWatchpoint(WatchKind::kWrite, 0x100, 8).ok());
  ASSERT_TRUE(points.InsertWatchpoint(WatchKind::kRead, 0x200, 4).ok());
  ASSERT_TRUE(points.InsertWatchpoint(WatchKind::kAccess, 0x300, 1).ok());
  EXPECT_EQ(points.watchpoint_count(WatchKind::kWrite), 2u);
  EXPECT_EQ(points.watchpoint_count(WatchKind::kRead), 1u);
  EXPECT_EQ(points.watchpoint_count(WatchKind::kAccess), 1u);

  points.RemoveWatchpoint(WatchKind::kWrite, 0x100, 8);
  EXPECT_EQ(points.watchpoint_count(WatchKind::kWrite), 1u);  // the second insertion stays
  points.RemoveWatchpoint(WatchKind::kRead, 0x100, 8);        // wrong kind: nothing removed
  points.RemoveWatchpoint(WatchKind::kWrite, 0x100, 4);       // wrong length: nothing removed
  EXPECT_EQ(points.watchpoint_count(WatchKind::kWrite), 1u);
  EXPECT_EQ(points.watchpoint_count(WatchKind::kRead), 1u);
  points.RemoveWatchpoint(WatchKind::kWrite, 0x100, 8);
  EXPECT_EQ(points.watchpoint_count(WatchKind::kWrite), 0u);
  EXPECT_TRUE(points.has_watchpoints());
}

TEST(StopPoints, ZeroLengthWatchpointIsRefused) {
  StopPoints points(*testing::SharedReven().trace, true);
  const core::Status s = points.InsertWatchpoint(WatchKind::kWrite, 0x100, 0);
  EXPECT_EQ(s.code(), core::StatusCode::kInvalidArgument);
  EXPECT_FALSE(points.has_watchpoints());
}

TEST(StopPoints, ConditionCarriesKindsFilterScopeAndInterrupt) {
  StopPoints points(*testing::SharedReven().trace, true);
  ASSERT_TRUE(points.InsertWatchpoint(WatchKind::kWrite, 0x100, 8).ok());
  ASSERT_TRUE(points.InsertWatchpoint(WatchKind::kRead, 0x200, 4).ok());
  ASSERT_TRUE(points.InsertWatchpoint(WatchKind::kAccess, 0x300, 2).ok());
  std::atomic<bool> interrupt{false};
  for (bool only_changes : {true, false}) {
    points.set_watch_only_changes(only_changes);
    const core::StopCondition c = points.Condition(&interrupt);
    EXPECT_EQ(c.interrupt, &interrupt);
    ASSERT_EQ(c.watches.size(), 3u);
    for (const core::Watch& w : c.watches) {
      switch (w.kind) {
        case core::WatchKind::kWrite:
          EXPECT_EQ(w.address, 0x100u);
          EXPECT_EQ(w.length, 8u);
          EXPECT_EQ(w.only_changes, only_changes);
          break;
        case core::WatchKind::kRead:
          EXPECT_EQ(w.address, 0x200u);
          EXPECT_EQ(w.length, 4u);
          EXPECT_FALSE(w.only_changes);  // a read has no new value to compare
          break;
        case core::WatchKind::kAccess:
          EXPECT_EQ(w.address, 0x300u);
          EXPECT_EQ(w.length, 2u);
          EXPECT_FALSE(w.only_changes);
          break;
      }
    }
  }
  points.set_thread_scope(core::ThreadId(7));
  EXPECT_EQ(points.Condition(nullptr).thread, core::ThreadId(7));
  points.set_thread_scope(std::nullopt);
  EXPECT_FALSE(points.Condition(nullptr).thread.has_value());
}

TEST(StopPoints, WatchStopsReportTheirKindAndAddress) {
  StopPoints points(*testing::SharedReven().trace, true);
  EXPECT_EQ(points.ReasonFor(Stop(core::StopEvent::Reason::kWatch, 0x104, core::WatchKind::kRead)),
            StopReason(Watch{WatchKind::kRead, 0x104}));
  EXPECT_EQ(
      points.ReasonFor(Stop(core::StopEvent::Reason::kWatch, 0x105, core::WatchKind::kAccess)),
      StopReason(Watch{WatchKind::kAccess, 0x105}));
  EXPECT_EQ(points.ReasonFor(Stop(core::StopEvent::Reason::kWatch, 0x106, core::WatchKind::kWrite)),
            StopReason(Watch{WatchKind::kWrite, 0x106}));
}

}  // namespace
}  // namespace backstep::gdbstub
