#include "packets/breakpoints.h"

#include "protocol/hex.h"
#include "session/session.h"

namespace backstep::gdbstub {
namespace {

WatchKind ToWatchKind(ZType type) {
  switch (type) {
    case ZType::kRead:
      return WatchKind::kRead;
    case ZType::kAccess:
      return WatchKind::kAccess;
    default:
      return WatchKind::kWrite;
  }
}

}  // namespace

std::optional<BreakpointRequest> ParseBreakpointArgs(std::string_view args) {
  if (!args.starts_with(',')) return std::nullopt;
  args.remove_prefix(1);
  args = args.substr(0, args.find(';'));
  std::size_t comma = args.find(',');
  if (comma == std::string_view::npos) return std::nullopt;
  auto addr = ParseHexU64(args.substr(0, comma));
  auto kind = ParseHexU64(args.substr(comma + 1));
  if (!addr || !kind) return std::nullopt;
  return BreakpointRequest{*addr, *kind};
}

Reply HandleBreakpoint(Session& session, ZType type, bool insert, std::string_view args) {
  auto request = ParseBreakpointArgs(args);
  if (!request) return Reply::BadArguments("Z/z: malformed arguments");
  Target& target = session.target();
  core::Status status;
  if (type == ZType::kSoftware || type == ZType::kHardware) {
    auto bp_type = type == ZType::kSoftware ? BreakpointType::kSoftware : BreakpointType::kHardware;
    Breakpoints* breakpoints = target.breakpoints();
    status = insert ? breakpoints->InsertBreakpoint(bp_type, request->addr, request->kind)
                    : breakpoints->RemoveBreakpoint(bp_type, request->addr, request->kind);
  } else {
    Watchpoints* watchpoints = target.watchpoints();
    WatchKind kind = ToWatchKind(type);
    if (!watchpoints->Supports(kind)) return Reply::Empty();
    if (request->kind == 0) return Reply::BadArguments("Z/z: empty watched range");
    status = insert ? watchpoints->InsertWatchpoint(kind, request->addr, request->kind)
                    : watchpoints->RemoveWatchpoint(kind, request->addr, request->kind);
  }
  if (!status.ok()) return Reply::FromStatus(status);
  return Reply::Ok();
}

}  // namespace backstep::gdbstub
