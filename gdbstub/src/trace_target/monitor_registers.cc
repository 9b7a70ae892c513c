// Monitor commands, registers family (monitor_table.h): the registers of
// the architecture table that gdb's register set does not hold.
#include <algorithm>

#include "backstep/core/arch.h"
#include "backstep/core/hex.h"
#include "trace_target/monitor_table.h"
#include "trace_target/trace_target.h"

namespace backstep::gdbstub {
namespace {

core::Expected<std::string> SystemRegisters(TraceTarget& target, const MonitorArgs& args) {
  if (args.size() != 1) return MonitorUsage("system-registers");
  const core::ArchDescription& arch = target.trace().arch();
  ServedPosition& served = target.served();
  BACKSTEP_ASSIGN_OR_RETURN(const core::RegisterFile* file,
                            served.view().Registers(served.current_thread()));
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

constexpr MonitorCommand kRegisters[] = {
    {"system-registers", "system-registers",
     "the current thread's known registers gdb does not show (control registers, MSRs, "
     "x64dbg's lasterror)",
     &SystemRegisters},
};

}  // namespace

std::span<const MonitorCommand> RegisterMonitorCommands() { return kRegisters; }

}  // namespace backstep::gdbstub
