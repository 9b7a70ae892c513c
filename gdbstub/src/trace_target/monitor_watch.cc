// Monitor commands, watch family (monitor_table.h): which writes a write
// watchpoint reports (StopPoints).
#include "trace_target/monitor_table.h"
#include "trace_target/trace_target.h"

namespace backstep::gdbstub {
namespace {

core::Expected<std::string> WatchFilter(TraceTarget& target, const MonitorArgs& args) {
  StopPoints& stop_points = target.stop_points();
  if (args.size() == 2 && args[1] == "changes") {
    stop_points.set_watch_only_changes(true);
  } else if (args.size() == 2 && args[1] == "all") {
    stop_points.set_watch_only_changes(false);
  } else if (args.size() != 1) {
    return MonitorUsage("watch-filter [changes|all]");
  }
  return std::string("watch-filter: ") + (stop_points.watch_only_changes()
                                              ? "changes (writes that change the value)\n"
                                              : "all (every write)\n");
}

constexpr MonitorCommand kWatch[] = {
    {"watch-filter", "watch-filter [changes|all]",
     "show or set which writes a write watchpoint reports (default: value changes only)",
     &WatchFilter},
};

}  // namespace

std::span<const MonitorCommand> WatchMonitorCommands() { return kWatch; }

}  // namespace backstep::gdbstub
