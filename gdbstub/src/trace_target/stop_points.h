// StopPoints: the breakpoints and watchpoints one client has set, and what a
// resume over the trace stops at (a core::StopCondition) and reports (a
// StopReason).
//
// Breakpoints by type: Z0 (software) and Z1 (hardware) behave alike on a
// recording; an address set as both is one breakpoint of the condition and
// reports as software. Inserting a breakpoint twice keeps one, and removing
// one that is not there succeeds (gdb removes what it re-inserts).
// Watchpoints by kind (write, read, access) and range: each insertion
// counts, as gdb may insert one range twice for two expressions, and a
// removal takes one away. Write watches stop only on a changed value when
// `watch_only_changes` (monitor watch-filter) says so. Thread scope: gdb's
// Z packets carry no thread, so stop points fire in every thread unless a
// scope is set (core::StopCondition::thread; breakpoints only).
//
// Costs: O(log n) per insertion and removal; Condition() is O(n).
// Thread-safety: one thread at a time (the owning TraceTarget's).
#pragma once

#include <atomic>
#include <cstdint>
#include <optional>
#include <set>

#include "backstep/core/search.h"
#include "backstep/core/status.h"
#include "backstep/core/types.h"
#include "backstep/gdbstub/capabilities.h"
#include "backstep/gdbstub/stop_reason.h"

namespace backstep::gdbstub {

class StopPoints {
 public:
  void InsertBreakpoint(BreakpointType type, core::Address addr);
  void RemoveBreakpoint(BreakpointType type, core::Address addr);
  // InvalidArgument for a zero length.
  core::Status InsertWatchpoint(WatchKind kind, core::Address addr, std::uint64_t length);
  void RemoveWatchpoint(WatchKind kind, core::Address addr, std::uint64_t length);

  // The stop reply of a breakpoint at `pc` (a software one wins), or
  // nullopt when none is inserted there.
  std::optional<StopReason> BreakpointAt(core::Address pc) const {
    if (sw_breakpoints_.contains(pc)) return StopReason(SwBreak{});
    if (hw_breakpoints_.contains(pc)) return StopReason(HwBreak{});
    return std::nullopt;
  }

  bool has_watchpoints() const { return !watchpoints_.empty(); }
  // Watchpoints of `kind`, duplicates counted.
  std::size_t watchpoint_count(WatchKind kind) const;

  // Breakpoints fire only in `thread` (nullopt: every thread).
  void set_thread_scope(std::optional<core::ThreadId> thread) { thread_scope_ = thread; }
  std::optional<core::ThreadId> thread_scope() const { return thread_scope_; }

  // What core::RunUntil looks for: every breakpoint once, every watchpoint.
  core::StopCondition Condition(bool watch_only_changes, const std::atomic<bool>* interrupt) const;
  // The stop reply for a stop on a breakpoint or a watchpoint
  // (REQUIRES: stop.reason is kBreakpoint or kWatch).
  StopReason ReasonFor(const core::StopEvent& stop) const;

 private:
  struct WatchRange {
    WatchKind kind;
    core::Address addr;
    std::uint64_t length;
    auto operator<=>(const WatchRange&) const = default;
  };

  std::set<core::Address> sw_breakpoints_, hw_breakpoints_;
  std::multiset<WatchRange> watchpoints_;
  std::optional<core::ThreadId> thread_scope_;
};

}  // namespace backstep::gdbstub
