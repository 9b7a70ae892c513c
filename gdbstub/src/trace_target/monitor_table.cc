// MonitorTable (monitor_table.h): the table of every family, and `help`.
#include "trace_target/monitor_table.h"

#include <algorithm>
#include <array>

namespace backstep::gdbstub {
namespace {

using Family = std::span<const MonitorCommand> (*)();

// `help` first, then the families in the order `help` lists them.
std::span<const MonitorCommand> HelpMonitorCommands();
constexpr std::array<Family, 6> kFamilies = {HelpMonitorCommands,     StatusMonitorCommands,
                                             MoveMonitorCommands,     MemoryMonitorCommands,
                                             RegisterMonitorCommands, WatchMonitorCommands};

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

core::Expected<std::string> Help(TraceTarget&, const MonitorArgs&) {
  std::string out = "backstep monitor commands:\n";
  for (Family family : kFamilies) {
    for (const MonitorCommand& c : family()) {
      std::string usage(c.usage);
      usage.resize(std::max<std::size_t>(usage.size() + 2, 32), ' ');
      out += "  " + usage + std::string(c.help) + "\n";
    }
  }
  return out;
}

constexpr MonitorCommand kHelp[] = {{"help", "help", "list the monitor commands", &Help}};

std::span<const MonitorCommand> HelpMonitorCommands() { return kHelp; }

}  // namespace

core::Status MonitorUsage(std::string_view usage) {
  return core::Status::InvalidArgument("usage: monitor " + std::string(usage));
}

core::Expected<std::string> MonitorTable::RunMonitorCommand(std::string_view command) {
  MonitorArgs args = SplitWords(command);
  if (args.empty()) args.push_back("help");
  for (Family family : kFamilies) {
    for (const MonitorCommand& c : family()) {
      if (c.name == args[0]) return c.run(target_, args);
    }
  }
  return core::Status::InvalidArgument("unknown monitor command '" + std::string(args[0]) +
                                       "' (try 'monitor help')");
}

}  // namespace backstep::gdbstub
