#include "session/packet_table.h"

#include <algorithm>
#include <array>

#include "backstep/gdbstub/target.h"
#include "packets/breakpoints.h"
#include "packets/handshake.h"
#include "packets/host.h"
#include "packets/host_io.h"
#include "packets/libraries_svr4.h"
#include "packets/lifecycle.h"
#include "packets/memory.h"
#include "packets/memory_region.h"
#include "packets/monitor.h"
#include "packets/read_only.h"
#include "packets/registers.h"
#include "packets/resume.h"
#include "packets/search.h"
#include "packets/signals.h"
#include "packets/threads.h"
#include "packets/trace_frames.h"
#include "packets/xfer.h"

namespace backstep::gdbstub {
namespace {

using enum Match;
using C = Capability;

// Every packet the stub answers with something other than "". docs/protocol.md §4 is
// the reference for each reply.
constexpr auto kRoutes = std::to_array<Route>({
    // Handshake (handshake.h).
    {"qSupported", kPrefix, C::kNone, HandleQSupported},
    {"QStartNoAckMode", kExact, C::kNone, HandleStartNoAckMode},
    {"QThreadSuffixSupported", kExact, C::kNone, HandleThreadSuffixSupported},
    {"QListThreadsInStopReply", kExact, C::kNone, HandleListThreadsInStopReply},
    {"QEnableErrorStrings", kExact, C::kNone, HandleEnableErrorStrings},
    {"vMustReplyEmpty", kExact, C::kNone, HandleDeclined},
    // Process and host (host.h, lifecycle.h).
    {"qHostInfo", kExact, C::kNone, HandleHostInfo},
    {"qProcessInfo", kExact, C::kNone, HandleProcessInfo},
    {"qSymbol:", kPrefix, C::kNone, HandleSymbol},
    {"qOffsets", kExact, C::kNone, HandleOffsets},
    {"qAttached", kPrefix, C::kNone, HandleAttached},
    {"D", kPrefix, C::kNone, HandleDetach},
    {"vKill;", kPrefix, C::kNone, HandleVKill},
    {"k", kExact, C::kNone, HandleKill},
    {"!", kExact, C::kNone, HandleExtendedMode},
    {"vRun;", kPrefix, C::kNone, HandleRun},
    {"R", kPrefix, C::kNone, HandleRestart},
    // Host I/O: the recorded process's files (host_io.h).
    {"vFile:setfs:", kPrefix, C::kHostFiles, HandleFileSetFs},
    {"vFile:open:", kPrefix, C::kHostFiles, HandleFileOpen},
    {"vFile:pread:", kPrefix, C::kHostFiles, HandleFilePread},
    {"vFile:fstat:", kPrefix, C::kHostFiles, HandleFileFstat},
    {"vFile:close:", kPrefix, C::kHostFiles, HandleFileClose},
    {"vFile:readlink:", kPrefix, C::kHostFiles, HandleFileReadlink},
    {"vFile:pwrite:", kPrefix, C::kHostFiles, HandleFileWrite},
    {"vFile:unlink:", kPrefix, C::kHostFiles, HandleFileWrite},
    // Target description, auxv, thread list (xfer.h).
    {"qXfer:features:read:", kPrefix, C::kNone, HandleXferFeatures},
    {"qXfer:auxv:read:", kPrefix, C::kAuxv, HandleXferAuxv},
    {"qXfer:exec-file:read:", kPrefix, C::kExecFile, HandleXferExecFile},
    {"qXfer:libraries-svr4:read:", kPrefix, C::kAuxv, HandleXferLibrariesSvr4},
    {"qXfer:threads:read:", kPrefix, C::kNone, HandleXferThreads},
    {"qXfer:traceframe-info:read:", kPrefix, C::kTraceFrames, HandleXferTraceframeInfo},
    {"qXfer:siginfo:read:", kPrefix, C::kSignals, HandleXferSiginfo},
    {"QPassSignals", kPrefix, C::kSignals, HandlePassSignals},
    {"QProgramSignals", kPrefix, C::kSignals, HandleProgramSignals},
    {"QCatchSyscalls", kPrefix, C::kSignals, HandleCatchSyscalls},
    // Threads (threads.h).
    {"H", kPrefix, C::kNone, HandleSetThread},
    {"T", kPrefix, C::kNone, HandleThreadAlive},
    {"qfThreadInfo", kExact, C::kNone, HandleFirstThreadInfo},
    {"qsThreadInfo", kExact, C::kNone, HandleNextThreadInfo},
    {"qC", kExact, C::kNone, HandleCurrentThread},
    {"qThreadExtraInfo,", kPrefix, C::kNone, HandleThreadExtraInfo},
    // Registers and memory (registers.h, memory.h, search.h, memory_region.h).
    {"g", kPrefix, C::kNone, HandleReadRegisters},
    {"p", kPrefix, C::kNone, HandleReadRegister},
    {"m", kPrefix, C::kNone, HandleReadMemory},
    {"x", kPrefix, C::kNone, HandleBinaryReadMemory},
    {"qSearch:memory:", kPrefix, C::kNone, HandleSearchMemory},
    {"qMemoryRegionInfo:", kPrefix, C::kMemoryMap, HandleMemoryRegionInfo},
    // The recording is read-only (read_only.h).
    {"G", kPrefix, C::kNone, HandleWrite},
    {"P", kPrefix, C::kNone, HandleWrite},
    {"M", kPrefix, C::kNone, HandleWrite},
    {"X", kPrefix, C::kNone, HandleWrite},
    {"_M", kPrefix, C::kNone, HandleDeclined},
    {"_m", kPrefix, C::kNone, HandleDeclined},
    {"QSaveRegisterState", kPrefix, C::kNone, HandleDeclined},
    {"QRestoreRegisterState:", kPrefix, C::kNone, HandleDeclined},
    // Breakpoints and watchpoints (breakpoints.h).
    {"Z0", kPrefix, C::kBreakpoints, HandleZ<ZType::kSoftware, true>},
    {"z0", kPrefix, C::kBreakpoints, HandleZ<ZType::kSoftware, false>},
    {"Z1", kPrefix, C::kBreakpoints, HandleZ<ZType::kHardware, true>},
    {"z1", kPrefix, C::kBreakpoints, HandleZ<ZType::kHardware, false>},
    {"Z2", kPrefix, C::kWatchpoints, HandleZ<ZType::kWrite, true>},
    {"z2", kPrefix, C::kWatchpoints, HandleZ<ZType::kWrite, false>},
    {"Z3", kPrefix, C::kWatchpoints, HandleZ<ZType::kRead, true>},
    {"z3", kPrefix, C::kWatchpoints, HandleZ<ZType::kRead, false>},
    {"Z4", kPrefix, C::kWatchpoints, HandleZ<ZType::kAccess, true>},
    {"z4", kPrefix, C::kWatchpoints, HandleZ<ZType::kAccess, false>},
    // Run control (resume.h).
    {"?", kExact, C::kNone, HandleStopQuery},
    {"vCont?", kExact, C::kNone, HandleVContQuery},
    {"vCont;", kPrefix, C::kNone, HandleVCont},
    {"c", kPrefix, C::kNone, HandleContinue},
    {"C", kPrefix, C::kNone, HandleContinueSignal},
    {"s", kPrefix, C::kNone, HandleStep},
    {"S", kPrefix, C::kNone, HandleStepSignal},
    {"bc", kExact, C::kReverseExecution, HandleReverseContinue},
    {"bs", kExact, C::kReverseExecution, HandleReverseStep},
    // Monitor commands (monitor.h).
    {"qRcmd,", kPrefix, C::kMonitorCommands, HandleMonitorCommand},
    // tfind (trace_frames.h).
    {"QTFrame:", kPrefix, C::kTraceFrames, HandleSelectTraceFrame},
    {"qTStatus", kExact, C::kTraceFrames, HandleTraceStatus},
    {"qTfP", kExact, C::kTraceFrames, HandleTracepointUploadPacket<true>},
    {"qTsP", kExact, C::kTraceFrames, HandleTracepointUploadPacket<false>},
    {"qTfV", kExact, C::kTraceFrames, HandleVariableUploadPacket<true>},
    {"qTsV", kExact, C::kTraceFrames, HandleVariableUploadPacket<false>},
    {"qTV:", kPrefix, C::kTraceFrames, HandleTraceVariable},
    {"qTP:", kPrefix, C::kTraceFrames, HandleTracepointStatus},
});
// FindRoute compares first bytes before anything else.
static_assert(std::ranges::none_of(kRoutes, [](const Route& r) { return r.prefix.empty(); }));

}  // namespace

std::span<const Route> PacketRoutes() { return kRoutes; }

const Route* FindRoute(std::string_view packet) {
  const Route* best = nullptr;
  for (const Route& route : kRoutes) {
    // Most routes differ in their first byte: skip them without a compare
    // (this lookup runs for every packet, the steps' `bs` and `m` included).
    if (packet.empty() || route.prefix[0] != packet[0]) continue;
    bool matches =
        route.match == Match::kExact ? packet == route.prefix : packet.starts_with(route.prefix);
    if (matches && (best == nullptr || route.prefix.size() > best->prefix.size())) best = &route;
  }
  return best;
}

bool HasCapability(Target& target, Capability capability) {
  switch (capability) {
    case Capability::kNone:
      return true;
    case Capability::kReverseExecution:
      return target.reverse_execution() != nullptr;
    case Capability::kBreakpoints:
      return target.breakpoints() != nullptr;
    case Capability::kWatchpoints:
      return target.watchpoints() != nullptr;
    case Capability::kTraceFrames:
      return target.trace_frames() != nullptr;
    case Capability::kMonitorCommands:
      return target.monitor_commands() != nullptr;
    case Capability::kMemoryMap:
      return target.memory_map() != nullptr;
    case Capability::kHostFiles:
      return target.host_files() != nullptr;
    case Capability::kAuxv:
      return !target.auxv().empty();
    case Capability::kExecFile:
      return !target.exec_file().empty();
    case Capability::kSignals:
      return target.signals() != nullptr;
  }
  return false;
}

}  // namespace backstep::gdbstub
