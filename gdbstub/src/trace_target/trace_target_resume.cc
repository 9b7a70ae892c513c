// Run control of TraceTarget: steps and continues in both directions (and
// the steps ArmedMoves makes its moves of). The rules are docs/protocol.md §6;
// continues are core::RunUntil (which encodes them), steps use the index's
// per-thread event lists.
#include <algorithm>
#include <utility>

#include "backstep/core/trace_query.h"
#include "trace_target/trace_target.h"

namespace backstep::gdbstub {
namespace {

StopReason Edge(core::Direction direction) {
  return HistoryEdge{direction == core::Direction::kForward ? HistoryEdge::Side::kEnd
                                                            : HistoryEdge::Side::kBegin};
}

}  // namespace

core::Expected<StopReason> TraceTarget::Resume(ResumeKind kind,
                                               std::optional<core::ThreadId> thread,
                                               const std::atomic<bool>* interrupt) {
  if (auto armed = armed_moves_.Run(thread, interrupt)) return std::move(*armed);
  return Move(armed_moves_.direction(), kind, thread, interrupt);
}

core::Expected<StopReason> TraceTarget::ResumeBackward(ResumeKind kind,
                                                       std::optional<core::ThreadId> thread,
                                                       const std::atomic<bool>* interrupt) {
  if (auto armed = armed_moves_.Run(thread, interrupt)) return std::move(*armed);
  return Move(core::Direction::kBackward, kind, thread, interrupt);
}

core::Expected<StopReason> TraceTarget::RangeStep(core::Address start, core::Address end,
                                                  std::optional<core::ThreadId> thread,
                                                  const std::atomic<bool>* interrupt) {
  if (auto armed = armed_moves_.Run(thread, interrupt)) return std::move(*armed);
  // `monitor direction reverse` makes every step a reverse step; gdb never
  // range-steps backwards, so that is one step.
  if (armed_moves_.direction() == core::Direction::kBackward) {
    return Step(core::Direction::kBackward, thread);
  }
  const core::ThreadId stepping = thread ? *thread : current_thread();
  while (true) {
    BACKSTEP_ASSIGN_OR_RETURN(StopReason stop, Step(core::Direction::kForward, stepping));
    if (!std::holds_alternative<DoneStep>(stop)) return stop;  // watch, end of history
    const std::optional<core::Address> pc = served_.cursor().Pc(stepping);
    if (!pc || *pc < start || *pc >= end) return stop;
    if (auto hit = stop_points_.BreakpointAt(*pc)) {
      const auto scope = stop_points_.thread_scope();
      if (!scope || *scope == stepping) return *hit;
    }
    if (interrupt != nullptr && interrupt->load(std::memory_order_relaxed)) {
      return StopReason(Interrupted{});
    }
  }
}

core::Expected<StopReason> TraceTarget::Move(core::Direction direction, ResumeKind kind,
                                             std::optional<core::ThreadId> thread,
                                             const std::atomic<bool>* interrupt) {
  if (kind == ResumeKind::kStep) return Step(direction, thread);
  return Continue(direction, interrupt);
}

core::Expected<StopReason> TraceTarget::Step(core::Direction direction,
                                             std::optional<core::ThreadId> thread) {
  const bool forward = direction == core::Direction::kForward;
  const std::uint64_t p = position().value;
  const core::ThreadId stepping = thread ? *thread : current_thread();
  // The event the step executes (forward) or un-executes (backward); a
  // thread without events never moves.
  std::optional<std::uint64_t> event = forward ? core::NextEventOfThread(*trace_, stepping, p)
                                               : core::PrevEventOfThread(*trace_, stepping, p);
  if (!forward && event) {
    BACKSTEP_ASSIGN_OR_RETURN(event, PrevEventWithPc(stepping, *event));
  }
  // At a history edge the stop names the thread that was asked to step:
  // LLDB's step plan otherwise sees its thread without a stop and steps it
  // again, for ever.
  if (!event || (!forward && *event < served_.first().value) ||  // no pc before the first
      (forward && *event >= served_.last().value)) {             // nor after the last
    if (HasThread(stepping)) served_.set_stop_thread(stepping);
    return Edge(direction);
  }
  core::Position land(*event);
  if (forward) {
    land =
        core::Position(core::NextEventOfThread(*trace_, stepping, *event + 1).value_or(*event + 1));
    land = std::min(land, served_.last());
  }

  // A step over a watched access reports the watchpoint, as hardware does
  // (and as gdb expects of reverse-stepi over a watched write).
  if (stop_points_.has_watchpoints()) {
    core::StopCondition condition = Condition(nullptr);
    condition.breakpoints.clear();
    if (forward) {
      condition.fence_high = core::Position(*event + 1);
    } else {
      condition.fence_low = core::Position(*event);
    }
    BACKSTEP_ASSIGN_OR_RETURN(core::StopEvent stop,
                              core::RunUntil(*trace_, core::Position(p), direction, condition));
    if (stop.reason == core::StopEvent::Reason::kWatch) {
      BACKSTEP_RETURN_IF_ERROR(MoveTo(stop.position, stop.thread));
      return ToStopReason(stop);
    }
  }
  if (forward && signals() != nullptr) {
    BACKSTEP_ASSIGN_OR_RETURN(std::optional<SignalStops::Slot> delivery,
                              signal_stops_.DeliveryAt(land.value, stepping));
    if (delivery) return StopAt(*delivery);
  }
  BACKSTEP_RETURN_IF_ERROR(MoveTo(land, stepping));
  BACKSTEP_ASSIGN_OR_RETURN(std::optional<StopReason> exec, ExecStep(direction, *event));
  if (exec) return std::move(*exec);
  return StopReason(DoneStep{});
}

core::Expected<std::optional<StopReason>> TraceTarget::ExecStep(core::Direction direction,
                                                                std::uint64_t event) {
  BACKSTEP_ASSIGN_OR_RETURN(std::optional<SignalStops::ExecPoint> exec, images_.NextExec(event));
  if (!exec || exec->event != event) return std::optional<StopReason>();
  return std::optional<StopReason>(ExecReason(direction, *exec));
}

StopReason TraceTarget::ExecReason(core::Direction direction, const SignalStops::ExecPoint& exec) {
  // Backward, the image now current is the one the exec ended.
  return Execd{std::string(direction == core::Direction::kForward ? std::string_view(exec.path)
                                                                  : images_.PathBefore(exec))};
}

core::Expected<std::optional<std::uint64_t>> TraceTarget::PrevEventWithPc(core::ThreadId thread,
                                                                          std::uint64_t event) {
  const core::Position from = position();
  const std::optional<core::ThreadId> stop_thread = served_.stop_thread();
  std::optional<std::uint64_t> found;
  for (std::optional<std::uint64_t> e = event; e && *e >= served_.first().value;
       e = core::PrevEventOfThread(*trace_, thread, *e)) {
    BACKSTEP_RETURN_IF_ERROR(MoveTo(core::Position(*e), stop_thread));
    if (served_.cursor().Pc(thread)) {
      found = e;
      break;
    }
  }
  BACKSTEP_RETURN_IF_ERROR(MoveTo(from, stop_thread));
  return found;
}

core::Expected<StopReason> TraceTarget::Continue(core::Direction direction,
                                                 const std::atomic<bool>* interrupt) {
  if (direction == core::Direction::kForward && signals() != nullptr) {
    BACKSTEP_ASSIGN_OR_RETURN(std::optional<StopReason> end, signal_stops_.EndOfProcess());
    if (end) return *end;
  }
  // A continue stops where the image changes (execve), both ways: the
  // client must load the other executable before anything else is hit.
  const bool forward = direction == core::Direction::kForward;
  core::StopCondition condition = Condition(interrupt);
  BACKSTEP_ASSIGN_OR_RETURN(
      std::optional<SignalStops::ExecPoint> exec,
      forward ? images_.NextExec(position().value) : images_.PrevExec(position().value));
  std::optional<core::Position> exec_stop;
  if (exec) {
    exec_stop = core::Position(forward ? exec->event + 1 : exec->event);
    if (forward && *exec_stop < condition.fence_high) condition.fence_high = *exec_stop;
    if (!forward && *exec_stop > condition.fence_low) condition.fence_low = *exec_stop;
  }
  auto stop = core::RunUntil(*trace_, position(), direction, condition);
  if (!stop.ok()) {
    if (stop.status().code() == core::StatusCode::kInterrupted) return StopReason(Interrupted{});
    return stop.status();
  }
  if (signals() != nullptr) {
    BACKSTEP_ASSIGN_OR_RETURN(std::optional<SignalStops::Slot> slot,
                              signal_stops_.SlotBefore(direction, *stop));
    if (slot) return StopAt(*slot);
  }
  BACKSTEP_RETURN_IF_ERROR(MoveTo(stop->position, stop->thread));
  if (exec_stop && stop->reason == core::StopEvent::Reason::kFence &&
      stop->position == *exec_stop) {
    served_.set_stop_thread(exec->thread);
    return ExecReason(direction, *exec);
  }
  return ToStopReason(*stop);
}

core::StopCondition TraceTarget::Condition(const std::atomic<bool>* interrupt) const {
  core::StopCondition condition = stop_points_.Condition(interrupt);
  condition.fence_low = served_.first();
  condition.fence_high = served_.last();
  return condition;
}

core::Expected<std::optional<StopReason>> TraceTarget::RunBackTo(
    core::Position to, const std::atomic<bool>* interrupt) {
  core::StopCondition condition = Condition(interrupt);
  condition.fence_low = to;
  auto stop = core::RunUntil(*trace_, position(), core::Direction::kBackward, condition);
  if (!stop.ok()) {
    if (stop.status().code() == core::StatusCode::kInterrupted) {
      return std::optional<StopReason>(Interrupted{});
    }
    return stop.status();
  }
  if (stop->reason == core::StopEvent::Reason::kFence) return std::optional<StopReason>();
  BACKSTEP_RETURN_IF_ERROR(MoveTo(stop->position, stop->thread));
  return std::optional<StopReason>(ToStopReason(*stop));
}

core::Status TraceTarget::MoveTo(core::Position p, std::optional<core::ThreadId> thread) {
  // NOTE: short moves step: a backward step undoes the cursor's journal
  // (sub-microsecond), where Seek() replays from a keyframe each time
  // (a `reverse-next` is thousands of `bs`, docs/protocol.md §7).
  core::Cursor& cursor = served_.cursor();
  const core::Position from = cursor.position();
  const std::uint64_t reach = core::KeyframeInterval(*trace_);
  if (p < from && from - p <= reach) {
    while (cursor.position() > p) BACKSTEP_RETURN_IF_ERROR(cursor.StepBackward());
  } else if (p > from && p - from <= reach) {
    while (cursor.position() < p) BACKSTEP_RETURN_IF_ERROR(cursor.StepForward());
  } else {
    BACKSTEP_RETURN_IF_ERROR(cursor.Seek(p));
  }
  served_.set_stop_thread(thread);
  signal_stops_.ClearStop();
  return core::Status::Ok();
}

StopReason TraceTarget::ToStopReason(const core::StopEvent& stop) const {
  using Reason = core::StopEvent::Reason;
  switch (stop.reason) {
    case Reason::kBreakpoint:
    case Reason::kWatch:
      return stop_points_.ReasonFor(stop);
    case Reason::kHistoryBegin:
      return HistoryEdge{HistoryEdge::Side::kBegin};
    case Reason::kHistoryEnd:
      return HistoryEdge{HistoryEdge::Side::kEnd};
    case Reason::kInterrupted:
      return Interrupted{};
    case Reason::kFence:
      // The only fences of a continue are the ends of the served history.
      if (stop.position == served_.first()) return HistoryEdge{HistoryEdge::Side::kBegin};
      if (stop.position == served_.last()) return HistoryEdge{HistoryEdge::Side::kEnd};
      break;
  }
  return DoneStep{};
}

core::Expected<StopReason> TraceTarget::StopAt(const SignalStops::Slot& slot) {
  BACKSTEP_RETURN_IF_ERROR(MoveTo(core::Position(slot.position()), slot.thread));
  return signal_stops_.StoppedAt(slot);
}

core::Expected<std::optional<core::Position>> TraceTarget::SignalFrameCall(core::Address slot,
                                                                           core::ThreadId thread,
                                                                           core::Position before) {
  if (signals() == nullptr) return std::optional<core::Position>();
  return signal_stops_.DeliveryWithFrameAt(slot, thread, before);
}

}  // namespace backstep::gdbstub
