// StopPoints: the Breakpoints and Watchpoints capabilities of a TraceTarget
// (the session's Z/z packets land here), and what a resume over the trace
// stops at (a core::StopCondition) and reports (a StopReason).
//
// Breakpoints by type: Z0 (software) and Z1 (hardware) behave alike on a
// recording; an address set as both is one breakpoint of the condition and
// reports as software. Inserting a breakpoint twice keeps one, and removing
// one that is not there succeeds (gdb removes what it re-inserts).
// Watchpoints by kind (write, read, access) and range: each insertion
// counts, as gdb may insert one range twice for two expressions, and a
// removal takes one away. Read and access kinds exist only when the trace
// records reads; a range past the end of the address space is refused at
// insertion (gdb reports it at once). Write watches stop only on a changed
// value when watch_only_changes() (monitor watch-filter) says so. Thread scope: gdb's
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
#include "backstep/core/trace.h"
#include "backstep/core/types.h"
#include "backstep/gdbstub/capabilities.h"
#include "backstep/gdbstub/stop_reason.h"

namespace backstep::gdbstub {

class StopPoints final : public Breakpoints, public Watchpoints {
 public:
  // `trace` must outlive the stop points.
  StopPoints(const core::Trace& trace, bool watch_only_changes)
      : trace_(trace), watch_only_changes_(watch_only_changes) {}

  // ---- Breakpoints (software and hardware behave alike on a recording;
  // `kind` is ignored). Never fail.
  core::Status InsertBreakpoint(BreakpointType type, core::Address addr,
                                std::uint64_t kind) override;
  core::Status RemoveBreakpoint(BreakpointType type, core::Address addr,
                                std::uint64_t kind) override;

  // ---- Watchpoints. Insertion: InvalidArgument for a zero length or a
  // range past the end of the address space. Removal never fails.
  bool Supports(WatchKind kind) const override;
  core::Status InsertWatchpoint(WatchKind kind, core::Address addr, std::uint64_t length) override;
  core::Status RemoveWatchpoint(WatchKind kind, core::Address addr, std::uint64_t length) override;
  // Write watches report only value-changing writes (monitor watch-filter).
  bool watch_only_changes() const { return watch_only_changes_; }
  void set_watch_only_changes(bool only_changes) { watch_only_changes_ = only_changes; }

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
  core::StopCondition Condition(const std::atomic<bool>* interrupt) const;
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

  const core::Trace& trace_;
  bool watch_only_changes_;
  std::set<core::Address> sw_breakpoints_, hw_breakpoints_;
  std::multiset<WatchRange> watchpoints_;
  std::optional<core::ThreadId> thread_scope_;
};

}  // namespace backstep::gdbstub
