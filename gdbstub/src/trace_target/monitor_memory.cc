// Monitor commands, memory family (monitor_table.h): who wrote or read
// memory, answered from the index (core/include/backstep/core/trace_query.h,
// provenance.h) without moving the client.
#include "backstep/core/hex.h"
#include "backstep/core/number.h"
#include "backstep/core/provenance.h"
#include "backstep/core/trace_query.h"
#include "trace_target/monitor_table.h"
#include "trace_target/trace_target.h"

namespace backstep::gdbstub {
namespace {

constexpr std::size_t kDefaultHistoryMax = 50;
constexpr std::size_t kMaxBytesShown = 64;

std::string DescribeAccess(const core::Access& a) {
  std::string out = "event " + std::to_string(a.event) + " (thread " +
                    std::to_string(a.thread.value) + ") " + (a.is_write ? "wrote " : "read ") +
                    std::to_string(a.data.size()) + " byte" + (a.data.size() == 1 ? "" : "s") +
                    " at " + core::HexU64(a.address) + ":";
  if (!a.data.empty()) {
    const std::span<const std::uint8_t> bytes(a.data);
    out += ' ' + core::HexBytes(bytes.first(std::min(bytes.size(), kMaxBytesShown)), ' ');
  }
  if (a.data.size() > kMaxBytesShown) out += " ...";
  return out + "\n";
}

// ADDR [LEN] at args[1..]; LEN defaults to 1.
std::optional<std::pair<core::Address, std::uint64_t>> ParseRange(const MonitorArgs& args) {
  if (args.size() < 2 || args.size() > 3) return std::nullopt;
  auto addr = core::ParseNumber(args[1]);
  auto length = args.size() == 3 ? core::ParseNumber(args[2]) : std::optional<std::uint64_t>(1);
  if (!addr || !length || *length == 0) return std::nullopt;
  return std::pair(*addr, *length);
}

// last-write (backward: the last write before now) and next-write (the
// next one from now on): the same words, the same answer, two directions.
core::Expected<std::string> NearestWrite(TraceTarget& target, const MonitorArgs& args,
                                         core::Direction direction) {
  const bool backward = direction == core::Direction::kBackward;
  auto range = ParseRange(args);
  if (!range) return MonitorUsage(backward ? "last-write ADDR [LEN]" : "next-write ADDR [LEN]");
  const core::Position now = target.position();
  const auto find = backward ? &core::LastWrite : &core::NextWrite;
  BACKSTEP_ASSIGN_OR_RETURN(
      std::optional<core::Access> access,
      find(target.trace(), range->first, range->second, now, core::AddressKind::kVirtual));
  if (!access) {
    return backward ? "no write before position " + std::to_string(now.value) + "\n"
                    : "no write from position " + std::to_string(now.value) + " on\n";
  }
  return DescribeAccess(*access);
}

core::Expected<std::string> LastWrite(TraceTarget& target, const MonitorArgs& args) {
  return NearestWrite(target, args, core::Direction::kBackward);
}

core::Expected<std::string> NextWrite(TraceTarget& target, const MonitorArgs& args) {
  return NearestWrite(target, args, core::Direction::kForward);
}

core::Expected<std::string> History(TraceTarget& target, const MonitorArgs& all_args) {
  MonitorArgs args = all_args;
  std::size_t max = kDefaultHistoryMax;
  for (std::size_t i = 1; i + 1 < args.size(); ++i) {
    if (args[i] != "--max") continue;
    auto n = core::ParseNumber(args[i + 1]);
    if (!n || *n == 0) return MonitorUsage("history ADDR [LEN] [--max N]");
    max = static_cast<std::size_t>(*n);
    args.erase(args.begin() + static_cast<std::ptrdiff_t>(i),
               args.begin() + static_cast<std::ptrdiff_t>(i) + 2);
    break;
  }
  auto range = ParseRange(args);
  if (!range) return MonitorUsage("history ADDR [LEN] [--max N]");
  const core::Trace& trace = target.trace();
  // One more than asked, to say whether the list was cut.
  BACKSTEP_ASSIGN_OR_RETURN(std::vector<core::Access> accesses,
                            core::History(trace, range->first, range->second, core::Position(0),
                                          core::Position(trace.event_count()), max + 1));
  if (accesses.empty()) return std::string("no recorded access\n");
  std::string out;
  for (std::size_t i = 0; i < accesses.size() && i < max; ++i) out += DescribeAccess(accesses[i]);
  if (accesses.size() > max) out += "... (more; use --max N)\n";
  return out;
}

core::Expected<std::string> Origin(TraceTarget& target, const MonitorArgs& args) {
  constexpr const char* kUsage = "origin ADDR [LEN] [DEPTH]";
  if (args.size() < 2 || args.size() > 4) return MonitorUsage(kUsage);
  auto address = core::ParseNumber(args[1]);
  auto length = args.size() >= 3 ? core::ParseNumber(args[2]) : std::optional<std::uint64_t>(1);
  auto depth = args.size() == 4 ? core::ParseNumber(args[3])
                                : std::optional<std::uint64_t>(core::kDefaultOriginDepth);
  if (!address || !length || *length == 0 || *length > 4096 || !depth || *depth == 0 ||
      *depth > 1000) {
    return MonitorUsage(kUsage);
  }
  BACKSTEP_ASSIGN_OR_RETURN(std::vector<core::OriginStep> steps,
                            core::Origin(target.trace(), *address, *length, target.position(),
                                         static_cast<unsigned>(*depth)));
  return core::FormatOrigin(steps);
}

constexpr MonitorCommand kMemory[] = {
    {"last-write", "last-write ADDR [LEN]", "the last write to [ADDR, ADDR+LEN) before now",
     &LastWrite},
    {"next-write", "next-write ADDR [LEN]", "the next write to [ADDR, ADDR+LEN) from now on",
     &NextWrite},
    {"history", "history ADDR [LEN] [--max N]",
     "every recorded access to [ADDR, ADDR+LEN), oldest first (default max 50)", &History},
    {"origin", "origin ADDR [LEN] [DEPTH]",
     "where the bytes at ADDR came from now: writer, instruction, source, recursively (depth 8)",
     &Origin},
};

}  // namespace

std::span<const MonitorCommand> MemoryMonitorCommands() { return kMemory; }

}  // namespace backstep::gdbstub
