#include "trace_target/stop_points.h"

namespace backstep::gdbstub {
namespace {

WatchKind FromCore(core::WatchKind kind) {
  switch (kind) {
    case core::WatchKind::kRead:
      return WatchKind::kRead;
    case core::WatchKind::kAccess:
      return WatchKind::kAccess;
    case core::WatchKind::kWrite:
      break;
  }
  return WatchKind::kWrite;
}

core::WatchKind ToCore(WatchKind kind) {
  switch (kind) {
    case WatchKind::kRead:
      return core::WatchKind::kRead;
    case WatchKind::kAccess:
      return core::WatchKind::kAccess;
    case WatchKind::kWrite:
      break;
  }
  return core::WatchKind::kWrite;
}

}  // namespace

core::Status StopPoints::InsertBreakpoint(BreakpointType type, core::Address addr, std::uint64_t) {
  (type == BreakpointType::kSoftware ? sw_breakpoints_ : hw_breakpoints_).insert(addr);
  return core::Status::Ok();
}

core::Status StopPoints::RemoveBreakpoint(BreakpointType type, core::Address addr, std::uint64_t) {
  (type == BreakpointType::kSoftware ? sw_breakpoints_ : hw_breakpoints_).erase(addr);
  return core::Status::Ok();
}

bool StopPoints::Supports(WatchKind kind) const {
  return kind == WatchKind::kWrite || trace_.header().records_reads;
}

core::Status StopPoints::InsertWatchpoint(WatchKind kind, core::Address addr,
                                          std::uint64_t length) {
  // Refused here rather than at the next continue: gdb reports it at once.
  BACKSTEP_RETURN_IF_ERROR(core::CheckRange(trace_, addr, length));
  if (length == 0) return core::Status::InvalidArgument("watchpoint of length 0");
  watchpoints_.insert(WatchRange{kind, addr, length});
  return core::Status::Ok();
}

core::Status StopPoints::RemoveWatchpoint(WatchKind kind, core::Address addr,
                                          std::uint64_t length) {
  auto it = watchpoints_.find(WatchRange{kind, addr, length});
  if (it != watchpoints_.end()) watchpoints_.erase(it);
  return core::Status::Ok();
}

std::size_t StopPoints::watchpoint_count(WatchKind kind) const {
  std::size_t n = 0;
  for (const WatchRange& w : watchpoints_) n += w.kind == kind;
  return n;
}

core::StopCondition StopPoints::Condition(const std::atomic<bool>* interrupt) const {
  core::StopCondition condition;
  condition.breakpoints.assign(sw_breakpoints_.begin(), sw_breakpoints_.end());
  for (core::Address addr : hw_breakpoints_) {
    if (!sw_breakpoints_.contains(addr)) condition.breakpoints.push_back(addr);
  }
  for (const WatchRange& w : watchpoints_) {
    core::Watch watch;
    watch.address = w.addr;
    watch.length = w.length;
    watch.kind = ToCore(w.kind);
    // Only writes have a value to compare: a read or access watch always
    // stops, as hardware does.
    watch.only_changes = w.kind == WatchKind::kWrite && watch_only_changes_;
    condition.watches.push_back(watch);
  }
  condition.thread = thread_scope_;
  condition.interrupt = interrupt;
  return condition;
}

StopReason StopPoints::ReasonFor(const core::StopEvent& stop) const {
  if (stop.reason == core::StopEvent::Reason::kWatch) {
    return Watch{FromCore(stop.watch_kind), stop.address};
  }
  // Set as both: gdb expects swbreak, which it reports as a breakpoint hit.
  if (sw_breakpoints_.contains(stop.address)) return SwBreak{};
  return HwBreak{};
}

}  // namespace backstep::gdbstub
