#include "packets/host.h"

#include "protocol/hex.h"
#include "session/session.h"

namespace backstep::gdbstub {
namespace {

void AppendCommonKeys(std::string& out, const HostInfo& info) {
  out += "triple:";
  AppendHexBytes(out, info.triple);
  out += ";ptrsize:" + std::to_string(info.pointer_size);
  out += info.little_endian ? ";endian:little" : ";endian:big";
  out += ";ostype:";
  out += info.os_type;
  out += ';';
}

}  // namespace

Reply HandleHostInfo(Session& session, std::string_view) {
  const HostInfo* info = session.target().host_info();
  if (info == nullptr) return Reply::Empty();
  std::string out;
  AppendCommonKeys(out, *info);
  out += info->watchpoints_trap_after ? "watchpoint_exceptions_received:after;"
                                      : "watchpoint_exceptions_received:before;";
  return Reply::Packet(std::move(out));
}

Reply HandleProcessInfo(Session& session, std::string_view) {
  const HostInfo* info = session.target().host_info();
  if (info == nullptr) return Reply::Empty();
  std::string out = "pid:";
  AppendHexNumber(out, session.target().pid());
  out += ';';
  AppendCommonKeys(out, *info);
  return Reply::Packet(std::move(out));
}

Reply HandleSymbol(Session&, std::string_view) { return Reply::Ok(); }

Reply HandleOffsets(Session&, std::string_view) { return Reply::Empty(); }

}  // namespace backstep::gdbstub
