// Monitor commands of TraceTarget (`monitor ...` in gdb, `process plugin
// packet monitor ...` in LLDB). Commands that move arm the move for the next
// resume packet (docs/lldb.md §2.2); the others answer from the index.
#include <algorithm>
#include <charconv>
#include <cinttypes>
#include <cstdio>

#include "backstep/core/hex.h"
#include "backstep/core/provenance.h"
#include "backstep/core/trace_query.h"
#include "trace_target/trace_target.h"

namespace backstep::gdbstub {
namespace {

constexpr std::size_t kDefaultHistoryMax = 50;

std::vector<std::string_view> SplitWords(std::string_view text) {
  std::vector<std::string_view> words;
  while (true) {
    std::size_t start = text.find_first_not_of(" \t\r\n");
    if (start == std::string_view::npos) return words;
    text.remove_prefix(start);
    std::size_t end = text.find_first_of(" \t\r\n");
    words.push_back(text.substr(0, end));
    if (end == std::string_view::npos) return words;
    text.remove_prefix(end);
  }
}

// "0x1f" (hex) or "31" (decimal).
std::optional<std::uint64_t> ParseNumber(std::string_view text) {
  int base = 10;
  if (text.size() > 2 && text[0] == '0' && (text[1] == 'x' || text[1] == 'X')) {
    base = 16;
    text.remove_prefix(2);
  }
  std::uint64_t value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value, base);
  if (text.empty() || ec != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return value;
}

std::string Hex(std::uint64_t value) {
  char buf[24];
  std::snprintf(buf, sizeof buf, "0x%" PRIx64, value);
  return buf;
}

std::string DescribeAccess(const core::Access& a) {
  std::string out = "event " + std::to_string(a.event) + " (thread " +
                    std::to_string(a.thread.value) + ") " + (a.is_write ? "wrote " : "read ") +
                    std::to_string(a.data.size()) + " byte" + (a.data.size() == 1 ? "" : "s") +
                    " at " + Hex(a.address) + ":";
  static const char kDigits[] = "0123456789abcdef";
  for (std::size_t i = 0; i < a.data.size() && i < 64; ++i) {
    out += ' ';
    out += kDigits[a.data[i] >> 4];
    out += kDigits[a.data[i] & 15];
  }
  if (a.data.size() > 64) out += " ...";
  return out + "\n";
}

core::Status Usage(std::string_view usage) {
  return core::Status::InvalidArgument("usage: monitor " + std::string(usage));
}

// ADDR [LEN] at args[1..]; LEN defaults to 1.
std::optional<std::pair<core::Address, std::uint64_t>> ParseRange(
    const std::vector<std::string_view>& args) {
  if (args.size() < 2 || args.size() > 3) return std::nullopt;
  auto addr = ParseNumber(args[1]);
  auto length = args.size() == 3 ? ParseNumber(args[2]) : std::optional<std::uint64_t>(1);
  if (!addr || !length || *length == 0) return std::nullopt;
  return std::pair(*addr, *length);
}

}  // namespace

const TraceTarget::MonitorCommand TraceTarget::kMonitorCommands[] = {
    {"help", "help", "list the monitor commands", &TraceTarget::MonitorHelp},
    {"info", "info [mem]",
     "trace format, events, threads, position, index; mem: the mappings now (QEMU's format)",
     &TraceTarget::MonitorInfo},
    {"when", "when", "the current position (and the selected trace frame's)",
     &TraceTarget::MonitorWhen},
    {"goto", "goto N|P%|end",
     "arm a move to position N (or P% of the trace); the next stepi/continue performs it",
     &TraceTarget::MonitorGoto},
    {"reverse-stepi", "reverse-stepi",
     "arm one instruction back; the next stepi/continue performs it",
     &TraceTarget::MonitorReverseStepi},
    {"reverse-finish", "reverse-finish SLOT",
     "arm a run back to the call that stored the return address at SLOT (the frame's CFA - 8)",
     &TraceTarget::MonitorReverseFinish},
    {"reverse-next", "reverse-next FUNC END CALLER CALLER_END CALLER_LINE ADDR:LINE...",
     "arm gdb's reverse-next in function [FUNC, END) with its line rows (the LLDB plugin's)",
     &TraceTarget::MonitorReverseNext},
    {"direction", "direction [reverse|forward]",
     "show or set the direction of stepi/continue (LLDB 19 has no reverse commands)",
     &TraceTarget::MonitorDirection},
    {"last-write", "last-write ADDR [LEN]", "the last write to [ADDR, ADDR+LEN) before now",
     &TraceTarget::MonitorLastWrite},
    {"next-write", "next-write ADDR [LEN]", "the next write to [ADDR, ADDR+LEN) from now on",
     &TraceTarget::MonitorNextWrite},
    {"history", "history ADDR [LEN] [--max N]",
     "every recorded access to [ADDR, ADDR+LEN), oldest first (default max 50)",
     &TraceTarget::MonitorHistory},
    {"origin", "origin ADDR [LEN] [DEPTH]",
     "where the bytes at ADDR came from now: writer, instruction, source, recursively (depth 8)",
     &TraceTarget::MonitorOrigin},
    {"system-registers", "system-registers",
     "the current thread's known registers gdb does not show (control registers, MSRs, "
     "x64dbg's lasterror)",
     &TraceTarget::MonitorSystemRegisters},
    {"watch-filter", "watch-filter [changes|all]",
     "show or set which writes a write watchpoint reports (default: value changes only)",
     &TraceTarget::MonitorWatchFilter},
};

core::Expected<std::string> TraceTarget::RunMonitorCommand(std::string_view command) {
  MonitorArgs args = SplitWords(command);
  if (args.empty()) args.push_back("help");
  for (const MonitorCommand& c : kMonitorCommands) {
    if (c.name == args[0]) return (this->*c.run)(args);
  }
  return core::Status::InvalidArgument("unknown monitor command '" + std::string(args[0]) +
                                       "' (try 'monitor help')");
}

core::Expected<std::string> TraceTarget::MonitorHelp(const MonitorArgs&) {
  std::string out = "backstep monitor commands:\n";
  for (const MonitorCommand& c : kMonitorCommands) {
    std::string usage(c.usage);
    usage.resize(std::max<std::size_t>(usage.size() + 2, 32), ' ');
    out += "  " + usage + std::string(c.help) + "\n";
  }
  return out;
}

core::Expected<std::string> TraceTarget::MonitorInfo(const MonitorArgs& args) {
  if (args.size() > 1 && args[1] == "mem") return MonitorInfoMem();
  const core::TraceHeader& header = trace_->header();
  const std::uint64_t events = trace_->event_count();
  std::string out = "trace:      " + trace_->path() + "\n";
  out +=
      "format:     " + header.format +
      (header.address_kind == core::AddressKind::kPhysical ? " (physical memory, page walk)" : "") +
      "\n";
  out +=
      "events:     " + std::to_string(events) + " (positions 0.." + std::to_string(events) + ")\n";
  // One line per thread (the first 16): the events it executes, first and
  // last, from the index's runs (O(log runs) each).
  const std::vector<core::ThreadSpan> spans = core::ThreadSpans(*trace_);
  const std::size_t thread_count = spans.size();
  out += "threads:    " + std::to_string(thread_count) + "\n";
  for (std::size_t i = 0; i < thread_count && i < 16; ++i) {
    const core::ThreadSpan& span = spans[i];
    out += "  thread " + std::to_string(span.thread.value) + ": ";
    if (span.first && span.last) {
      out += "events " + std::to_string(*span.first) + ".." + std::to_string(*span.last) + "\n";
    } else {
      out += "no events\n";
    }
  }
  if (thread_count > 16) out += "  ... " + std::to_string(thread_count - 16) + " more\n";
  out += "position:   " + std::to_string(position().value) + " (thread " +
         std::to_string(current_thread().value) + ")\n";
  if (first_position_.value != 0) {
    out += "start:      " + std::to_string(first_position_.value) +
           " (the first position whose pc is known; history begins there)\n";
  }
  if (last_position_.value != events) {
    out += "end:        " + std::to_string(last_position_.value) +
           " (the last position whose pc is known; history ends there)\n";
  }
  out += std::string("reads:      ") + (header.records_reads
                                            ? "recorded (rwatch/awatch available)\n"
                                            : "not recorded (rwatch/awatch are refused)\n");
  const core::IndexStatus& index = trace_->index_status();
  out += "index:      " + (index.path.empty() ? std::string("in memory") : index.path) +
         (index.reused ? " (reused)" : "") + "\n";
  if (!options_.exe_path.empty()) out += "exe:        " + options_.exe_path + "\n";
  out += std::string("direction:  ") +
         (direction_ == core::Direction::kForward ? "forward" : "reverse") + "\n";
  out += "watch:      " +
         std::string(options_.watch_only_changes ? "value changes only" : "every write") + "\n";
  if (const auto* go = std::get_if<ArmedGoto>(&armed_)) {
    out += "armed:      goto " + std::to_string(go->position.value) + "\n";
  } else if (std::holds_alternative<ArmedReverseStep>(armed_)) {
    out += "armed:      reverse-stepi\n";
  } else if (std::holds_alternative<ArmedReverseFinish>(armed_)) {
    out += "armed:      reverse-finish\n";
  } else if (std::holds_alternative<ArmedReverseNext>(armed_)) {
    out += "armed:      reverse-next\n";
  }
  return out;
}

core::Expected<std::string> TraceTarget::MonitorWhen(const MonitorArgs&) {
  std::string out =
      "position " + std::to_string(position().value) + " of " +
      std::to_string(trace_->event_count()) + " (thread " +
      std::to_string((frame_cursor_active_ ? cursor_->current_thread() : current_thread()).value) +
      ")\n";
  if (frame_cursor_active_) {
    // `tfind` selected a frame: registers and memory come from there.
    out += "trace frame at position " + std::to_string(selected_position_.value) + " (thread " +
           std::to_string(frame_cursor_->current_thread().value) + ")\n";
  }
  return out;
}

core::Expected<std::string> TraceTarget::MonitorGoto(const MonitorArgs& args) {
  if (args.size() != 2) return Usage("goto N|P%|end");
  const std::uint64_t end = trace_->event_count();
  std::optional<std::uint64_t> target;
  std::string_view text = args[1];
  if (text == "end") {
    target = last_position_.value;  // the end of the served history
  } else if (text.ends_with('%')) {
    auto percent = ParseNumber(text.substr(0, text.size() - 1));
    if (percent && *percent <= 100) {
      target = static_cast<std::uint64_t>(static_cast<long double>(end) * *percent / 100);
    }
  } else {
    target = ParseNumber(text);
  }
  if (!target) return Usage("goto N|P%|end");
  if (*target > end) {
    return core::Status::OutOfRange("position " + std::to_string(*target) + " is past the end (" +
                                    std::to_string(end) + ")");
  }
  if (*target < first_position_.value) {
    return core::Status::OutOfRange(
        "position " + std::to_string(*target) +
        " is before the first position whose pc is known (" +
        std::to_string(first_position_.value) +
        "): gdb and LLDB cannot show a state without a pc; 'monitor goto " +
        std::to_string(first_position_.value) + "' is the earliest");
  }
  if (*target > last_position_.value) {
    return core::Status::OutOfRange(
        "position " + std::to_string(*target) + " is after the last position whose pc is known (" +
        std::to_string(last_position_.value) +
        "): gdb and LLDB cannot show a state without a pc; 'monitor goto end' goes there");
  }
  ArmGoto(core::Position(*target));
  return "goto " + std::to_string(*target) +
         " armed: the next stepi (LLDB: thread step-inst) moves there\n";
}

core::Expected<std::string> TraceTarget::MonitorReverseStepi(const MonitorArgs& args) {
  if (args.size() != 1) return Usage("reverse-stepi");
  ArmReverseStep();
  return std::string("reverse-stepi armed: the next stepi (LLDB: thread step-inst) performs it\n");
}

core::Expected<std::string> TraceTarget::MonitorDirection(const MonitorArgs& args) {
  if (args.size() == 2 && (args[1] == "reverse" || args[1] == "backward")) {
    SetDirection(core::Direction::kBackward);
  } else if (args.size() == 2 && args[1] == "forward") {
    SetDirection(core::Direction::kForward);
  } else if (args.size() != 1) {
    return Usage("direction [reverse|forward]");
  }
  return std::string("direction: ") +
         (direction_ == core::Direction::kForward ? "forward\n" : "reverse\n");
}

core::Expected<std::string> TraceTarget::MonitorLastWrite(const MonitorArgs& args) {
  auto range = ParseRange(args);
  if (!range) return Usage("last-write ADDR [LEN]");
  BACKSTEP_ASSIGN_OR_RETURN(std::optional<core::Access> access,
                            core::LastWrite(*trace_, range->first, range->second, position()));
  if (!access) return "no write before position " + std::to_string(position().value) + "\n";
  return DescribeAccess(*access);
}

core::Expected<std::string> TraceTarget::MonitorNextWrite(const MonitorArgs& args) {
  auto range = ParseRange(args);
  if (!range) return Usage("next-write ADDR [LEN]");
  BACKSTEP_ASSIGN_OR_RETURN(std::optional<core::Access> access,
                            core::NextWrite(*trace_, range->first, range->second, position()));
  if (!access) return "no write from position " + std::to_string(position().value) + " on\n";
  return DescribeAccess(*access);
}

core::Expected<std::string> TraceTarget::MonitorHistory(const MonitorArgs& all_args) {
  MonitorArgs args = all_args;
  std::size_t max = kDefaultHistoryMax;
  for (std::size_t i = 1; i + 1 < args.size(); ++i) {
    if (args[i] != "--max") continue;
    auto n = ParseNumber(args[i + 1]);
    if (!n || *n == 0) return Usage("history ADDR [LEN] [--max N]");
    max = static_cast<std::size_t>(*n);
    args.erase(args.begin() + static_cast<std::ptrdiff_t>(i),
               args.begin() + static_cast<std::ptrdiff_t>(i) + 2);
    break;
  }
  auto range = ParseRange(args);
  if (!range) return Usage("history ADDR [LEN] [--max N]");
  // One more than asked, to say whether the list was cut.
  BACKSTEP_ASSIGN_OR_RETURN(std::vector<core::Access> accesses,
                            core::History(*trace_, range->first, range->second, core::Position(0),
                                          core::Position(trace_->event_count()), max + 1));
  if (accesses.empty()) return std::string("no recorded access\n");
  std::string out;
  for (std::size_t i = 0; i < accesses.size() && i < max; ++i) out += DescribeAccess(accesses[i]);
  if (accesses.size() > max) out += "... (more; use --max N)\n";
  return out;
}

core::Expected<std::string> TraceTarget::MonitorOrigin(const MonitorArgs& args) {
  constexpr const char* kUsage = "origin ADDR [LEN] [DEPTH]";
  if (args.size() < 2 || args.size() > 4) return Usage(kUsage);
  auto address = ParseNumber(args[1]);
  auto length = args.size() >= 3 ? ParseNumber(args[2]) : std::optional<std::uint64_t>(1);
  auto depth = args.size() == 4 ? ParseNumber(args[3])
                                : std::optional<std::uint64_t>(core::kDefaultOriginDepth);
  if (!address || !length || *length == 0 || *length > 4096 || !depth || *depth == 0 ||
      *depth > 1000) {
    return Usage(kUsage);
  }
  BACKSTEP_ASSIGN_OR_RETURN(
      std::vector<core::OriginStep> steps,
      core::Origin(*trace_, *address, *length, position(), static_cast<unsigned>(*depth)));
  return core::FormatOrigin(steps);
}

core::Expected<std::string> TraceTarget::MonitorSystemRegisters(const MonitorArgs& args) {
  if (args.size() != 1) return Usage("system-registers");
  const core::ArchDescription& arch = trace_->arch();
  BACKSTEP_ASSIGN_OR_RETURN(const core::RegisterFile* file, view().Registers(current_thread()));
  std::string out;
  std::size_t unknown = 0;
  for (std::size_t i = 0; i < arch.registers().size(); ++i) {
    const auto id = static_cast<core::RegisterId>(i);
    const core::RegisterInfo& info = arch.info(id);
    if (info.gdb_regnum >= 0 || info.group != "system") continue;
    std::vector<std::uint8_t> bytes(info.size);
    if (!file->Read(id, bytes)) {
      ++unknown;
      continue;
    }
    std::reverse(bytes.begin(), bytes.end());  // most significant first, as `backstep dump`
    out += std::string(info.name) +
           std::string(info.name.size() < 16 ? 16 - info.name.size() : 1, ' ') + "0x" +
           core::HexBytes(bytes) + "\n";
  }
  if (out.empty()) out = "no system register is known here\n";
  if (unknown != 0) out += "(" + std::to_string(unknown) + " more unknown)\n";
  return out;
}

core::Expected<std::string> TraceTarget::MonitorWatchFilter(const MonitorArgs& args) {
  if (args.size() == 2 && args[1] == "changes") {
    options_.watch_only_changes = true;
  } else if (args.size() == 2 && args[1] == "all") {
    options_.watch_only_changes = false;
  } else if (args.size() != 1) {
    return Usage("watch-filter [changes|all]");
  }
  return std::string("watch-filter: ") + (options_.watch_only_changes
                                              ? "changes (writes that change the value)\n"
                                              : "all (every write)\n");
}

}  // namespace backstep::gdbstub

namespace backstep::gdbstub {

core::Expected<std::string> TraceTarget::MonitorReverseFinish(const MonitorArgs& args) {
  auto slot = args.size() == 2 ? ParseNumber(args[1]) : std::nullopt;
  if (!slot) return Usage("reverse-finish SLOT");
  BACKSTEP_ASSIGN_OR_RETURN(core::Position call, ArmReverseFinish(*slot));
  return "reverse-finish armed: back to the call at position " + std::to_string(call.value) +
         "; the next stepi (LLDB: thread step-inst) performs it\n";
}

core::Expected<std::string> TraceTarget::MonitorReverseNext(const MonitorArgs& args) {
  constexpr std::string_view kUsage =
      "reverse-next FUNC END CALLER CALLER_END CALLER_LINE ADDR:LINE...";
  if (args.size() < 6) return Usage(kUsage);
  ReverseNextPlan plan;
  std::optional<std::uint64_t> numbers[5];
  for (int i = 0; i < 5; ++i) numbers[i] = ParseNumber(args[i + 1]);
  for (const auto& n : numbers) {
    if (!n) return Usage(kUsage);
  }
  plan.function_start = *numbers[0];
  plan.function_end = *numbers[1];
  plan.caller_row_start = *numbers[2];
  plan.caller_row_end = *numbers[3];
  plan.caller_line = static_cast<std::uint32_t>(*numbers[4]);
  for (std::size_t i = 6; i < args.size(); ++i) {
    std::size_t colon = args[i].find(':');
    if (colon == std::string_view::npos) return Usage(kUsage);
    auto addr = ParseNumber(args[i].substr(0, colon));
    auto line = ParseNumber(args[i].substr(colon + 1));
    if (!addr || !line || *line > 0xffffffffu) return Usage(kUsage);
    plan.rows.push_back(LineRow{*addr, static_cast<std::uint32_t>(*line)});
  }
  BACKSTEP_RETURN_IF_ERROR(ArmReverseNext(std::move(plan)));
  return std::string("reverse-next armed: the next stepi (LLDB: thread step-inst) performs it\n");
}

}  // namespace backstep::gdbstub
