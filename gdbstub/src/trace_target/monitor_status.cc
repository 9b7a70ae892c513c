// Monitor commands, status family (monitor_table.h): what is served and
// where the client is.
#include <algorithm>
#include <cstdio>

#include "backstep/core/trace_query.h"
#include "trace_target/monitor_table.h"
#include "trace_target/trace_target.h"

namespace backstep::gdbstub {
namespace {

// QEMU's x86-64 `info mem`: "start-end size flags", flags = user page,
// readable, writable (QEMU marks every present page readable; a mapping
// without read permission shows '-'). What GEF parses for vmmap.
core::Expected<std::string> InfoMem(TraceTarget& target) {
  BACKSTEP_ASSIGN_OR_RETURN(std::vector<core::Mapping> maps,
                            target.process_memory_map().MappingsHere());
  std::string out;
  char line[96];
  for (const core::Mapping& m : maps) {
    const bool known = m.permissions.size() == 3;
    int n = std::snprintf(
        line, sizeof line, "%016llx-%016llx %016llx u%c%c\n",
        static_cast<unsigned long long>(m.start), static_cast<unsigned long long>(m.end()),
        static_cast<unsigned long long>(m.size), !known || m.permissions[0] == 'r' ? 'r' : '-',
        !known || m.permissions[1] == 'w' ? 'w' : '-');
    out.append(line, static_cast<std::size_t>(std::max(n, 0)));
  }
  return out;
}

core::Expected<std::string> Info(TraceTarget& target, const MonitorArgs& args) {
  if (args.size() > 1 && args[1] == "mem") return InfoMem(target);
  const core::Trace& trace = target.trace();
  ServedPosition& served = target.served();
  const core::TraceHeader& header = trace.header();
  const std::uint64_t events = trace.event_count();
  std::string out = "trace:      " + trace.path() + "\n";
  out +=
      "format:     " + header.format +
      (header.address_kind == core::AddressKind::kPhysical ? " (physical memory, page walk)" : "") +
      "\n";
  out +=
      "events:     " + std::to_string(events) + " (positions 0.." + std::to_string(events) + ")\n";
  // One line per thread (the first 16): the events it executes, first and
  // last, from the index's runs (O(log runs) each).
  const std::vector<core::ThreadSpan> spans = core::ThreadSpans(trace);
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
  out += "position:   " + std::to_string(served.position().value) + " (thread " +
         std::to_string(served.current_thread().value) + ")\n";
  if (served.first().value != 0) {
    out += "start:      " + std::to_string(served.first().value) +
           " (the first position whose pc is known; history begins there)\n";
  }
  if (served.last().value != events) {
    out += "end:        " + std::to_string(served.last().value) +
           " (the last position whose pc is known; history ends there)\n";
  }
  out += std::string("reads:      ") + (header.records_reads
                                            ? "recorded (rwatch/awatch available)\n"
                                            : "not recorded (rwatch/awatch are refused)\n");
  const core::IndexStatus& index = trace.index_status();
  out += "index:      " + (index.path.empty() ? std::string("in memory") : index.path) +
         (index.reused ? " (reused)" : "") + "\n";
  const std::string& exe_path = target.options().exe_path;
  if (!exe_path.empty()) out += "exe:        " + exe_path + "\n";
  out += std::string("direction:  ") +
         (target.armed_moves().direction() == core::Direction::kForward ? "forward" : "reverse") +
         "\n";
  out += "watch:      " +
         std::string(target.stop_points().watch_only_changes() ? "value changes only"
                                                               : "every write") +
         "\n";
  if (const std::string armed = target.armed_moves().Describe(); !armed.empty()) {
    out += "armed:      " + armed + "\n";
  }
  return out;
}

core::Expected<std::string> When(TraceTarget& target, const MonitorArgs&) {
  ServedPosition& served = target.served();
  const bool frame = served.frame_selected();
  std::string out =
      "position " + std::to_string(served.position().value) + " of " +
      std::to_string(target.trace().event_count()) + " (thread " +
      std::to_string((frame ? served.cursor().current_thread() : served.current_thread()).value) +
      ")\n";
  if (frame) {
    // `tfind` selected a frame: registers and memory come from there.
    out += "trace frame at position " + std::to_string(served.selected_position().value) +
           " (thread " + std::to_string(served.view().current_thread().value) + ")\n";
  }
  return out;
}

constexpr MonitorCommand kStatus[] = {
    {"info", "info [mem]",
     "trace format, events, threads, position, index; mem: the mappings now (QEMU's format)",
     &Info},
    {"when", "when", "the current position (and the selected trace frame's)", &When},
};

}  // namespace

std::span<const MonitorCommand> StatusMonitorCommands() { return kStatus; }

}  // namespace backstep::gdbstub
