// MonitorTable: the MonitorCommands capability of a TraceTarget (qRcmd:
// `monitor ...` in gdb, `process plugin packet monitor ...` in LLDB).
//
// A command is a row of a table: its name, usage, one line of help and a
// handler. The rows come in families, one file each, and `help` lists them
// in this order:
//   monitor_status.cc     info [mem], when
//   monitor_moves.cc      goto, reverse-stepi, reverse-finish, reverse-next,
//                         direction (they arm a move for the next resume
//                         packet: ArmedMoves)
//   monitor_memory.cc     last-write, next-write, history, origin (answered
//                         from the index)
//   monitor_registers.cc  system-registers
//   monitor_watch.cc      watch-filter
// To add a command: add a row (and its handler) to its family's table, or a
// new family function below and its file, listed in Families().
//
// Contract: a handler gets the words of the command (args[0] is its name),
// returns the console output (ending in a newline), or InvalidArgument
// with MonitorUsage() when the words do not fit, or the error of what it
// asked. Numbers are core::ParseNumber's (0x-hex or decimal).
//
// Thread-safety: one thread at a time (the owning TraceTarget's).
#pragma once

#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "backstep/core/expected.h"
#include "backstep/gdbstub/capabilities.h"

namespace backstep::gdbstub {

class TraceTarget;

using MonitorArgs = std::vector<std::string_view>;
using MonitorHandler = core::Expected<std::string> (*)(TraceTarget& target,
                                                       const MonitorArgs& args);

struct MonitorCommand {
  std::string_view name;
  std::string_view usage;  // "goto N|P%|end"
  std::string_view help;
  MonitorHandler run;
};

// The families (each returns its static table).
std::span<const MonitorCommand> StatusMonitorCommands();
std::span<const MonitorCommand> MoveMonitorCommands();
std::span<const MonitorCommand> MemoryMonitorCommands();
std::span<const MonitorCommand> RegisterMonitorCommands();
std::span<const MonitorCommand> WatchMonitorCommands();

// InvalidArgument("usage: monitor <usage>").
core::Status MonitorUsage(std::string_view usage);

class MonitorTable final : public MonitorCommands {
 public:
  // `target` must outlive the table (it owns it).
  explicit MonitorTable(TraceTarget& target) : target_(target) {}

  // Splits `command` into words and runs the row named by the first; no
  // words is `help`. InvalidArgument for an unknown name.
  core::Expected<std::string> RunMonitorCommand(std::string_view command) override;

 private:
  TraceTarget& target_;
};

}  // namespace backstep::gdbstub
