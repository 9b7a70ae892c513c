// The source-level reverse moves of TraceTarget (reverse-finish,
// reverse-next), armed by the LLDB plugin or `monitor reverse-finish/next`
// and run by the next resume packet as one move, so the debugger sees one
// stop (gdb gets the same landing position from a storm of `bs`, rsp.md §7).
// The rules are gdb 13's (infrun.c, reverse stepping); the debugger supplies
// the line rows, the stub the positions.
#include <algorithm>
#include <cstring>

#include "target/trace_target.h"

namespace backstep::gdbstub {
namespace {

// The row of `plan` holding `pc` as [start, end), if pc is in the function.
std::optional<std::pair<LineRow, core::Address>> RowOf(const ReverseNextPlan& plan,
                                                       core::Address pc) {
  if (pc < plan.function_start || pc >= plan.function_end || plan.rows.empty()) return std::nullopt;
  auto it = std::upper_bound(plan.rows.begin(), plan.rows.end(), pc,
                             [](core::Address a, const LineRow& r) { return a < r.start; });
  if (it == plan.rows.begin()) return std::nullopt;
  core::Address end = it == plan.rows.end() ? plan.function_end : it->start;
  return std::pair(*std::prev(it), end);
}

}  // namespace

core::Expected<core::Position> TraceTarget::ArmReverseFinish(core::Address return_slot) {
  BACKSTEP_ASSIGN_OR_RETURN(std::optional<core::Access> call,
                            core::LastWrite(*trace_, return_slot, 8, position()));
  if (!call) {
    return core::Status::NotFound("no call stored a return address at " +
                                  std::to_string(return_slot) + " before position " +
                                  std::to_string(position().value));
  }
  armed_ = ArmedReverseFinish{core::Position(call->event)};
  return core::Position(call->event);
}

core::Status TraceTarget::ArmReverseNext(ReverseNextPlan plan) {
  if (plan.function_start >= plan.function_end) {
    return core::Status::InvalidArgument("reverse-next: empty function range");
  }
  for (std::size_t i = 0; i < plan.rows.size(); ++i) {
    const core::Address start = plan.rows[i].start;
    if (start < plan.function_start || start >= plan.function_end ||
        (i > 0 && start <= plan.rows[i - 1].start)) {
      return core::Status::InvalidArgument(
          "reverse-next: line rows must be sorted and inside the function");
    }
  }
  if (plan.caller_row_start > plan.caller_row_end) {
    return core::Status::InvalidArgument("reverse-next: bad caller row");
  }
  armed_ = ArmedReverseNext{std::move(plan)};
  return core::Status::Ok();
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

core::Expected<StopReason> TraceTarget::RunReverseFinish(core::Position call,
                                                         const std::atomic<bool>* interrupt) {
  const core::ThreadId thread = current_thread();
  if (call >= position()) return StopReason(DoneStep{});  // armed, then moved elsewhere
  BACKSTEP_ASSIGN_OR_RETURN(std::optional<StopReason> early, RunBackTo(call, interrupt));
  if (early) return *early;
  BACKSTEP_RETURN_IF_ERROR(MoveTo(call, thread));
  return StopReason(DoneStep{});
}

core::Expected<StopReason> TraceTarget::RunReverseNext(const ReverseNextPlan& plan,
                                                       const std::atomic<bool>* interrupt) {
  const core::ArchDescription& arch = trace_->arch();
  const core::ThreadId thread = current_thread();
  struct Regs {
    core::Address pc = 0, sp = 0;
  };
  auto read = [&]() -> core::Expected<Regs> {
    BACKSTEP_ASSIGN_OR_RETURN(const core::RegisterFile* file, cursor_->Registers(thread));
    if (!file->known(arch.pc()) || !file->known(arch.sp())) {
      return core::Status::NotFound("reverse-next: pc or sp unknown at position " +
                                    std::to_string(position().value));
    }
    return Regs{file->u64(arch.pc()), file->u64(arch.sp())};
  };

  BACKSTEP_ASSIGN_OR_RETURN(Regs now, read());
  // The range being stepped and the entry of its function (a range that
  // starts there does not stop: gdb goes on back to the call).
  core::Address lo = now.pc, hi = now.pc + 1, entry = plan.function_start;
  std::uint32_t line = 0;
  bool in_caller = false;
  if (auto row = RowOf(plan, now.pc)) {
    lo = row->first.start;
    hi = row->second;
    line = row->first.line;
  }
  while (true) {
    if (interrupt && interrupt->load()) return StopReason(Interrupted{});
    const Regs before = now;
    BACKSTEP_ASSIGN_OR_RETURN(StopReason step, Step(core::Direction::kBackward, thread));
    if (!std::holds_alternative<DoneStep>(step)) return step;  // history start, watched write
    BACKSTEP_ASSIGN_OR_RETURN(now, read());
    if (sw_breakpoints_.contains(now.pc)) return StopReason(SwBreak{});
    if (hw_breakpoints_.contains(now.pc)) return StopReason(HwBreak{});

    // Un-executed a `ret` into the stepped code: skip the callee back to
    // its call, the last write of the return address's slot.
    if (now.sp < before.sp && (now.pc < lo || now.pc >= hi)) {
      std::uint8_t word[8];
      std::uint8_t known[8];
      core::Address returned_to = 0;
      if (cursor_->ReadMemory(now.sp, word, known, core::AddressKind::kVirtual).ok() &&
          std::all_of(known, known + 8, [](std::uint8_t k) { return k != 0; })) {
        std::memcpy(&returned_to, word, 8);
      }
      if (returned_to == before.pc) {
        BACKSTEP_ASSIGN_OR_RETURN(std::optional<core::Access> call,
                                  core::LastWrite(*trace_, now.sp, 8, position()));
        if (call && call->event < position().value) {
          BACKSTEP_ASSIGN_OR_RETURN(std::optional<StopReason> early,
                                    RunBackTo(core::Position(call->event), interrupt));
          if (early) return *early;
          BACKSTEP_RETURN_IF_ERROR(MoveTo(core::Position(call->event), thread));
          BACKSTEP_ASSIGN_OR_RETURN(now, read());
        }
      }
    }

    if (now.pc >= lo && now.pc < hi) {
      if (now.pc == lo && lo != entry) break;
      continue;
    }
    // Left the range: another row of the function, the caller's row, or
    // code without lines.
    std::optional<std::pair<LineRow, core::Address>> row;
    if (!in_caller) row = RowOf(plan, now.pc);
    if (!row && !in_caller && plan.caller_row_start < plan.caller_row_end &&
        now.pc >= plan.caller_row_start && now.pc < plan.caller_row_end) {
      row = std::pair(LineRow{plan.caller_row_start, plan.caller_line}, plan.caller_row_end);
      in_caller = true;
      entry = 0;  // the caller's entry is unknown; a caller row rarely starts there
    }
    if (!row) break;
    if (now.pc == row->first.start && row->first.line != line) break;
    lo = row->first.start;
    hi = row->second;
    line = row->first.line;
  }
  stop_thread_ = thread;
  return StopReason(DoneStep{});
}

}  // namespace backstep::gdbstub
