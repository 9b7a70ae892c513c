// FormatStopReply (declared in stop_reason.h): the one place that writes stop
// replies.
#include <type_traits>

#include "backstep/gdbstub/stop_reason.h"
#include "backstep/gdbstub/target.h"
#include "packets/registers.h"
#include "packets/thread_id.h"
#include "protocol/gdb_signals.h"
#include "protocol/hex.h"

namespace backstep::gdbstub {
namespace {

constexpr std::uint8_t kSigInt = 2;
constexpr std::uint8_t kSigTrap = 5;

std::string_view WatchKey(WatchKind kind) {
  switch (kind) {
    case WatchKind::kRead:
      return "rwatch:";
    case WatchKind::kAccess:
      return "awatch:";
    case WatchKind::kWrite:
      break;
  }
  return "watch:";
}

std::string EdgeDescription(const HistoryEdge& edge) {
  return edge.side == HistoryEdge::Side::kBegin ? "beginning of the recorded history"
                                                : "end of the recorded history";
}

std::string MoveDescription(const MoveDone& move) {
  return "moved to position " + std::to_string(move.position.value);
}

// LLDB's exception stop reason: its description is hex-encoded text.
std::string LldbException(std::string_view description) {
  return "reason:exception;description:" + HexBytes(description) + ';';
}

// The description of a move every thread shares (MoveDone), or nullopt.
// NOTE: not for HistoryEdge: LLDB keeps its selected thread when that
// thread has a stop reason, and a `continue` to the end must select the
// thread the stop names (a step that reaches an edge names the stepped
// thread anyway).
std::optional<std::string> SharedDescription(const StopReason& reason) {
  if (const auto* moved = std::get_if<MoveDone>(&reason)) return MoveDescription(*moved);
  return std::nullopt;
}

// `jstopinfo:` (LLDB): the stop reason of every thread, as hex-encoded
// JSON. The descriptions are our own plain ASCII text (no JSON escapes).
void AppendSharedStopInfo(std::string& out, Target& target, std::string_view description) {
  std::string json = "[";
  for (const ThreadInfo& thread : target.Threads()) {
    if (json.size() > 1) json += ',';
    json += "{\"tid\":" + std::to_string(thread.id.value) +
            ",\"signal\":5,\"reason\":\"exception\",\"description\":\"" + std::string(description) +
            "\"}";
  }
  json += ']';
  out += "jstopinfo:" + HexBytes(json) + ';';
}

// The `key:value;` that says why, or "" when nothing may be said.
std::string ReasonKey(const StopReason& reason, const StopReplyOptions& options) {
  return std::visit(
      [&](const auto& r) -> std::string {
        using R = std::decay_t<decltype(r)>;
        if constexpr (std::is_same_v<R, SwBreak>) {
          return options.swbreak ? "swbreak:;" : "";
        } else if constexpr (std::is_same_v<R, HwBreak>) {
          return options.hwbreak ? "hwbreak:;" : "";
        } else if constexpr (std::is_same_v<R, Watch>) {
          std::string out(WatchKey(r.kind));
          AppendHexNumber(out, r.addr);
          return out + ';';
        } else if constexpr (std::is_same_v<R, SyscallEntry> || std::is_same_v<R, SyscallReturn>) {
          std::string out(std::is_same_v<R, SyscallEntry> ? "syscall_entry:" : "syscall_return:");
          AppendHexNumber(out, r.number);
          return out + ';';
        } else if constexpr (std::is_same_v<R, HistoryEdge>) {
          // NOTE: `reason:` first: an LLDB that knows replaylog: (22) lets
          // it override the reason with its own "history boundary".
          return LldbException(EdgeDescription(r)) +
                 (r.side == HistoryEdge::Side::kBegin ? "replaylog:begin;" : "replaylog:end;");
        } else if constexpr (std::is_same_v<R, MoveDone>) {
          return LldbException(MoveDescription(r));
        } else if constexpr (std::is_same_v<R, Execd>) {
          return (options.exec_events ? "exec:" + HexBytes(r.path) + ';' : std::string()) +
                 LldbException("exec " + r.path);
        } else {
          return "";
        }
      },
      reason);
}

// The signal number of a `T` reply.
std::uint8_t StopSignal(const StopReason& reason, const StopReplyOptions& options) {
  if (std::holds_alternative<Interrupted>(reason)) return kSigInt;
  if (const auto* signal = std::get_if<Signaled>(&reason)) {
    if (options.host_signals) return static_cast<std::uint8_t>(signal->number);
    return GdbSignalFromLinux(signal->number).value_or(kSigTrap);
  }
  return kSigTrap;
}

// A register value as a number (thread-pcs:), if fully known and <= 8 bytes.
std::optional<std::uint64_t> AsNumber(const RegisterValue& value) {
  if (value.size == 0 || value.size > 8 || !value.all_known()) return std::nullopt;
  std::uint64_t n = 0;
  for (std::size_t i = value.size; i-- > 0;) n = (n << 8) | value.bytes[i];
  return n;
}

void AppendThreadList(std::string& out, Target& target, const StopReplyOptions& options) {
  std::vector<ThreadInfo> threads = target.Threads();
  std::uint64_t pid = target.pid();
  out += "threads:";
  for (std::size_t i = 0; i < threads.size(); ++i) {
    if (i > 0) out.push_back(',');
    AppendThreadId(out, pid, threads[i].id, options.multiprocess);
  }
  out += ';';
  auto pc_regnum = target.register_layout().pc;
  if (!pc_regnum) return;
  std::string pcs = "thread-pcs:";
  for (std::size_t i = 0; i < threads.size(); ++i) {
    auto value = target.ReadRegister(threads[i].id, *pc_regnum);
    auto pc = value.ok() ? AsNumber(*value) : std::nullopt;
    if (!pc) return;  // all or nothing: LLDB pairs threads and PCs by index
    if (i > 0) pcs.push_back(',');
    AppendHexNumber(pcs, *pc);
  }
  out += pcs + ';';
}

}  // namespace

std::string FormatStopReply(const StopReason& reason, Target& target,
                            const StopReplyOptions& options) {
  const auto* exited = std::get_if<Exited>(&reason);
  const auto* terminated = std::get_if<Terminated>(&reason);
  if (exited != nullptr || terminated != nullptr) {
    std::string out = exited != nullptr ? "W" : "X";
    AppendHexByte(
        out, exited != nullptr ? exited->code : StopSignal(Signaled{terminated->number}, options));
    if (options.multiprocess) {
      out += ";process:";
      AppendHexNumber(out, target.pid());
    }
    return out;
  }
  std::string out = "T";
  out.reserve(512);  // LLDB: every general register expedited, ~400 bytes on amd64
  AppendHexByte(out, StopSignal(reason, options));
  core::ThreadId thread = target.current_thread();
  out += "thread:";
  AppendThreadId(out, target.pid(), thread, options.multiprocess);
  out += ';';
  // Expedited registers save the client a `g`/`p` round trip per stop. gdb
  // cannot parse `xx` there, so a register with unknown bytes is left out.
  const RegisterLayout layout = target.register_layout();
  const std::span<const int> expedited =
      options.frame_registers_only && !layout.frame.empty() ? layout.frame : layout.expedited;
  for (int regnum : expedited) {
    auto value = target.ReadRegister(thread, regnum);
    if (!value.ok() || !value->all_known()) continue;
    if (regnum < 0x100) {
      AppendHexByte(out, static_cast<std::uint8_t>(regnum));
    } else {
      AppendHexNumber(out, static_cast<std::uint64_t>(regnum));
    }
    out += ':';
    AppendRegisterHex(out, *value);
    out += ';';
  }
  out += ReasonKey(reason, options);
  if (options.libraries_changed) out += "library:;";
  if (options.list_threads) {
    AppendThreadList(out, target, options);
    if (auto description = SharedDescription(reason)) {
      AppendSharedStopInfo(out, target, *description);
    }
  }
  return out;
}

}  // namespace backstep::gdbstub
