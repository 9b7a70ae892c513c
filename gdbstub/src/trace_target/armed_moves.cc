// ArmedMoves (armed_moves.h): arming checks what it can at once (so that a
// monitor command or the LLDB plugin reports it), running takes MoveSteps.
#include "trace_target/armed_moves.h"

#include <algorithm>
#include <cstring>
#include <string>
#include <utility>

#include "backstep/core/hex.h"
#include "backstep/core/trace_query.h"

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

void ArmedMoves::ArmGoto(core::Position p) {
  armed_ = Goto{std::clamp(p, served_.first(), served_.last())};
}

std::optional<core::Expected<StopReason>> ArmedMoves::Run(std::optional<core::ThreadId> thread,
                                                          const std::atomic<bool>* interrupt) {
  Armed armed = std::exchange(armed_, std::monostate{});
  if (std::holds_alternative<std::monostate>(armed)) return std::nullopt;
  core::Expected<StopReason> stop = StopReason(DoneStep{});
  if (const auto* go = std::get_if<Goto>(&armed)) {
    core::Status status = steps_.MoveTo(go->position, std::nullopt);
    if (!status.ok()) stop = status;
  } else if (std::holds_alternative<ReverseStep>(armed)) {
    // The thread the client steps (as `bs` steps the Hc thread), here and
    // in the source-level moves, whose plans came from its frame.
    stop = steps_.Step(core::Direction::kBackward, thread);
  } else if (const auto* finish = std::get_if<ReverseFinish>(&armed)) {
    stop = RunReverseFinish(finish->call, thread, interrupt);
  } else if (const auto* next = std::get_if<ReverseNext>(&armed)) {
    stop = RunReverseNext(next->plan, thread, interrupt);
  }
  // A move that ended where it was meant to is a MoveDone (stop_reason.h:
  // LLDB would step on while the pc stays the same, and ignore a stop
  // reported in a thread it did not step).
  if (stop.ok() && std::holds_alternative<DoneStep>(*stop)) {
    stop = StopReason(MoveDone{position()});
  }
  return stop;
}

std::string ArmedMoves::Describe() const {
  if (const auto* go = std::get_if<Goto>(&armed_)) {
    return "goto " + std::to_string(go->position.value);
  }
  if (std::holds_alternative<ReverseStep>(armed_)) return "reverse-stepi";
  if (std::holds_alternative<ReverseFinish>(armed_)) return "reverse-finish";
  if (std::holds_alternative<ReverseNext>(armed_)) return "reverse-next";
  return "";
}

void ArmedMoves::Reset() {
  armed_ = std::monostate{};
  direction_ = core::Direction::kForward;
}

core::Expected<core::Position> ArmedMoves::ArmReverseFinish(core::Address return_slot) {
  std::uint8_t word[8], known[8];
  core::Address return_address = 0;
  if (!served_.cursor().ReadMemory(return_slot, word, known, core::AddressKind::kVirtual).ok() ||
      !std::all_of(known, known + 8, [](std::uint8_t k) { return k != 0; })) {
    return core::Status::NotFound("the return address at " + core::HexU64(return_slot) +
                                  " is not recorded");
  }
  std::memcpy(&return_address, word, 8);
  BACKSTEP_ASSIGN_OR_RETURN(std::optional<core::Position> call,
                            FindCall(return_slot, return_address, position()));
  // Out of a signal handler, the "call" is the delivery (the kernel's frame
  // holds the return address): reverse-finish goes back to where the signal
  // interrupted the program.
  BACKSTEP_ASSIGN_OR_RETURN(
      std::optional<core::Position> delivery,
      steps_.SignalFrameCall(return_slot, served_.current_thread(), position()));
  if (delivery && (!call || *delivery > *call)) call = delivery;
  if (!call) {
    return core::Status::NotFound(
        "no call stored the return address " + core::HexU64(return_address) + " at " +
        core::HexU64(return_slot) + " before position " + std::to_string(position().value));
  }
  armed_ = ReverseFinish{*call};
  return *call;
}

core::Status ArmedMoves::ArmReverseNext(ReverseNextPlan plan) {
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
  armed_ = ReverseNext{std::move(plan)};
  return core::Status::Ok();
}

core::Expected<StopReason> ArmedMoves::RunReverseFinish(core::Position call,
                                                        std::optional<core::ThreadId> resumed,
                                                        const std::atomic<bool>* interrupt) {
  const core::ThreadId thread = resumed ? *resumed : served_.current_thread();
  if (call >= position()) return StopReason(DoneStep{});  // armed, then moved elsewhere
  BACKSTEP_ASSIGN_OR_RETURN(std::optional<StopReason> early, steps_.RunBackTo(call, interrupt));
  if (early) return *early;
  BACKSTEP_RETURN_IF_ERROR(steps_.MoveTo(call, thread));
  return StopReason(DoneStep{});
}

core::Expected<std::optional<core::Position>> ArmedMoves::FindCall(core::Address slot,
                                                                   core::Address return_address,
                                                                   core::Position before) {
  // NOTE: the call is not simply the last write of the slot: a callee may
  // store the same bytes there again (an xsave area, a system call's
  // recorded memory diff). The call is the write made by an instruction
  // just before the return address (2 to 7 bytes: `call rel32`, `call
  // *mem`) with rsp one word above the slot.
  constexpr int kMaxCandidates = 64;
  const core::ArchDescription& arch = trace_.arch();
  auto probe = trace_.NewCursor();
  if (!probe.ok()) return probe.status();
  for (int i = 0; i < kMaxCandidates; ++i) {
    BACKSTEP_ASSIGN_OR_RETURN(std::optional<core::Access> write,
                              core::LastWrite(trace_, slot, 8, before));
    if (!write) return std::optional<core::Position>();
    BACKSTEP_RETURN_IF_ERROR((*probe)->Seek(core::Position(write->event)));
    auto regs = (*probe)->Registers(write->thread);
    if (regs.ok() && (*regs)->known(arch.pc()) && (*regs)->known(arch.sp())) {
      const core::Address pc = (*regs)->u64(arch.pc()), sp = (*regs)->u64(arch.sp());
      if (sp == slot + 8 && return_address > pc && return_address - pc >= 2 &&
          return_address - pc <= 7) {
        return std::optional<core::Position>(core::Position(write->event));
      }
    }
    before = core::Position(write->event);
  }
  return std::optional<core::Position>();
}

core::Expected<StopReason> ArmedMoves::RunReverseNext(const ReverseNextPlan& plan,
                                                      std::optional<core::ThreadId> resumed,
                                                      const std::atomic<bool>* interrupt) {
  const core::ArchDescription& arch = trace_.arch();
  const core::ThreadId thread = resumed ? *resumed : served_.current_thread();
  struct Regs {
    core::Address pc = 0, sp = 0;
  };
  auto read = [&]() -> core::Expected<Regs> {
    BACKSTEP_ASSIGN_OR_RETURN(const core::RegisterFile* file, served_.cursor().Registers(thread));
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
    BACKSTEP_ASSIGN_OR_RETURN(StopReason step, steps_.Step(core::Direction::kBackward, thread));
    if (!std::holds_alternative<DoneStep>(step)) return step;  // history start, watched write
    BACKSTEP_ASSIGN_OR_RETURN(now, read());
    if (auto hit = stop_points_.BreakpointAt(now.pc)) return *hit;

    // Un-executed a `ret` into the stepped code: skip the callee back to
    // its call, the last write of the return address's slot.
    if (now.sp < before.sp && (now.pc < lo || now.pc >= hi)) {
      std::uint8_t word[8];
      std::uint8_t known[8];
      core::Address returned_to = 0;
      if (served_.cursor().ReadMemory(now.sp, word, known, core::AddressKind::kVirtual).ok() &&
          std::all_of(known, known + 8, [](std::uint8_t k) { return k != 0; })) {
        std::memcpy(&returned_to, word, 8);
      }
      if (returned_to == before.pc) {
        BACKSTEP_ASSIGN_OR_RETURN(std::optional<core::Position> call,
                                  FindCall(now.sp, returned_to, position()));
        if (call) {
          BACKSTEP_ASSIGN_OR_RETURN(std::optional<StopReason> early,
                                    steps_.RunBackTo(*call, interrupt));
          if (early) return *early;
          BACKSTEP_RETURN_IF_ERROR(steps_.MoveTo(*call, thread));
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
  served_.set_stop_thread(thread);
  return StopReason(DoneStep{});
}

}  // namespace backstep::gdbstub
