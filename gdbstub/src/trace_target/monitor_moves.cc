// Monitor commands, moves family (monitor_table.h): each arms a move
// (ArmedMoves) that the next resume packet performs, since LLDB 19 has no
// reverse commands (docs/lldb.md §2.2 has the user's view); `direction`
// turns the forward packets around.
#include "backstep/core/number.h"
#include "trace_target/monitor_table.h"
#include "trace_target/trace_target.h"

namespace backstep::gdbstub {
namespace {

core::Expected<std::string> Goto(TraceTarget& target, const MonitorArgs& args) {
  if (args.size() != 2) return MonitorUsage("goto N|P%|end");
  const std::uint64_t end = target.trace().event_count();
  const core::Position first = target.first_position(), last = target.last_position();
  std::optional<std::uint64_t> position;
  std::string_view text = args[1];
  if (text == "end") {
    position = last.value;  // the end of the served history
  } else if (text.ends_with('%')) {
    auto percent = core::ParseNumber(text.substr(0, text.size() - 1));
    if (percent && *percent <= 100) {
      position = static_cast<std::uint64_t>(static_cast<long double>(end) * *percent / 100);
    }
  } else {
    position = core::ParseNumber(text);
  }
  if (!position) return MonitorUsage("goto N|P%|end");
  if (*position > end) {
    return core::Status::OutOfRange("position " + std::to_string(*position) + " is past the end (" +
                                    std::to_string(end) + ")");
  }
  if (*position < first.value) {
    return core::Status::OutOfRange(
        "position " + std::to_string(*position) +
        " is before the first position whose pc is known (" + std::to_string(first.value) +
        "): gdb and LLDB cannot show a state without a pc; 'monitor goto " +
        std::to_string(first.value) + "' is the earliest");
  }
  if (*position > last.value) {
    return core::Status::OutOfRange(
        "position " + std::to_string(*position) +
        " is after the last position whose pc is known (" + std::to_string(last.value) +
        "): gdb and LLDB cannot show a state without a pc; 'monitor goto end' goes there");
  }
  target.armed_moves().ArmGoto(core::Position(*position));
  return "goto " + std::to_string(*position) +
         " armed: the next stepi (LLDB: thread step-inst) moves there\n";
}

core::Expected<std::string> ReverseStepi(TraceTarget& target, const MonitorArgs& args) {
  if (args.size() != 1) return MonitorUsage("reverse-stepi");
  target.armed_moves().ArmReverseStep();
  return std::string("reverse-stepi armed: the next stepi (LLDB: thread step-inst) performs it\n");
}

core::Expected<std::string> ReverseFinish(TraceTarget& target, const MonitorArgs& args) {
  auto slot = args.size() == 2 ? core::ParseNumber(args[1]) : std::nullopt;
  if (!slot) return MonitorUsage("reverse-finish SLOT");
  BACKSTEP_ASSIGN_OR_RETURN(core::Position call, target.armed_moves().ArmReverseFinish(*slot));
  return "reverse-finish armed: back to the call at position " + std::to_string(call.value) +
         "; the next stepi (LLDB: thread step-inst) performs it\n";
}

core::Expected<std::string> ReverseNext(TraceTarget& target, const MonitorArgs& args) {
  constexpr std::string_view kUsage =
      "reverse-next FUNC END CALLER CALLER_END CALLER_LINE ADDR:LINE...";
  if (args.size() < 6) return MonitorUsage(kUsage);
  ReverseNextPlan plan;
  std::optional<std::uint64_t> numbers[5];
  for (int i = 0; i < 5; ++i) numbers[i] = core::ParseNumber(args[i + 1]);
  for (const auto& n : numbers) {
    if (!n) return MonitorUsage(kUsage);
  }
  plan.function_start = *numbers[0];
  plan.function_end = *numbers[1];
  plan.caller_row_start = *numbers[2];
  plan.caller_row_end = *numbers[3];
  plan.caller_line = static_cast<std::uint32_t>(*numbers[4]);
  for (std::size_t i = 6; i < args.size(); ++i) {
    std::size_t colon = args[i].find(':');
    if (colon == std::string_view::npos) return MonitorUsage(kUsage);
    auto addr = core::ParseNumber(args[i].substr(0, colon));
    auto line = core::ParseNumber(args[i].substr(colon + 1));
    if (!addr || !line || *line > 0xffffffffu) return MonitorUsage(kUsage);
    plan.rows.push_back(LineRow{*addr, static_cast<std::uint32_t>(*line)});
  }
  BACKSTEP_RETURN_IF_ERROR(target.armed_moves().ArmReverseNext(std::move(plan)));
  return std::string("reverse-next armed: the next stepi (LLDB: thread step-inst) performs it\n");
}

core::Expected<std::string> Direction(TraceTarget& target, const MonitorArgs& args) {
  ArmedMoves& moves = target.armed_moves();
  if (args.size() == 2 && (args[1] == "reverse" || args[1] == "backward")) {
    moves.SetDirection(core::Direction::kBackward);
  } else if (args.size() == 2 && args[1] == "forward") {
    moves.SetDirection(core::Direction::kForward);
  } else if (args.size() != 1) {
    return MonitorUsage("direction [reverse|forward]");
  }
  return std::string("direction: ") +
         (moves.direction() == core::Direction::kForward ? "forward\n" : "reverse\n");
}

constexpr MonitorCommand kMoves[] = {
    {"goto", "goto N|P%|end",
     "arm a move to position N (or P% of the trace); the next stepi/continue performs it", &Goto},
    {"reverse-stepi", "reverse-stepi",
     "arm one instruction back; the next stepi/continue performs it", &ReverseStepi},
    {"reverse-finish", "reverse-finish SLOT",
     "arm a run back to the call that stored the return address at SLOT (the frame's CFA - 8)",
     &ReverseFinish},
    {"reverse-next", "reverse-next FUNC END CALLER CALLER_END CALLER_LINE ADDR:LINE...",
     "arm gdb's reverse-next in function [FUNC, END) with its line rows (the LLDB plugin's)",
     &ReverseNext},
    {"direction", "direction [reverse|forward]",
     "show or set the direction of stepi/continue (LLDB 19 has no reverse commands)", &Direction},
};

}  // namespace

std::span<const MonitorCommand> MoveMonitorCommands() { return kMoves; }

}  // namespace backstep::gdbstub
