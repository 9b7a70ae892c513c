#include "packets/registers.h"

#include <limits>

#include "protocol/hex.h"
#include "session/session.h"

namespace backstep::gdbstub {

std::optional<ReadRegistersRequest> ParseReadRegisters(std::string_view args) {
  auto split = SplitThreadSuffix(args);
  if (!split || !split->body.empty()) return std::nullopt;
  return ReadRegistersRequest{split->thread};
}

std::optional<ReadRegisterRequest> ParseReadRegister(std::string_view args) {
  auto split = SplitThreadSuffix(args);
  if (!split) return std::nullopt;
  auto regnum = ParseHexU64(split->body);
  if (!regnum || *regnum > static_cast<std::uint64_t>(std::numeric_limits<int>::max())) {
    return std::nullopt;
  }
  return ReadRegisterRequest{static_cast<int>(*regnum), split->thread};
}

void AppendRegisterHex(std::string& out, const RegisterValue& value) {
  if (value.all_known()) {
    AppendHexBytes(out, std::span<const std::uint8_t>(value.bytes).first(value.size));
    return;
  }
  for (std::size_t i = 0; i < value.size; ++i) {
    if (value.known & (std::uint64_t{1} << i)) {
      AppendHexByte(out, value.bytes[i]);
    } else {
      out += "xx";
    }
  }
}

Reply HandleReadRegisters(Session& session, std::string_view args) {
  auto request = ParseReadRegisters(args);
  if (!request) return Reply::BadArguments("g: malformed arguments");
  auto thread = session.RegisterThread(request->thread);
  if (!thread) return Reply::Fail("g: no such thread");
  Target& target = session.target();
  int count = target.register_layout().count;
  std::string out;
  out.reserve(static_cast<std::size_t>(count) * 16);
  for (int regnum = 0; regnum < count; ++regnum) {
    auto value = target.ReadRegister(*thread, regnum);
    if (!value.ok()) return Reply::FromStatus(value.status());
    AppendRegisterHex(out, *value);
  }
  return Reply::Packet(std::move(out));
}

Reply HandleReadRegister(Session& session, std::string_view args) {
  auto request = ParseReadRegister(args);
  if (!request) return Reply::BadArguments("p: malformed arguments");
  auto thread = session.RegisterThread(request->thread);
  if (!thread) return Reply::Fail("p: no such thread");
  Target& target = session.target();
  if (request->regnum >= target.register_layout().count) return Reply::Fail("p: no such register");
  auto value = target.ReadRegister(*thread, request->regnum);
  if (!value.ok()) return Reply::FromStatus(value.status());
  std::string out;
  AppendRegisterHex(out, *value);
  return Reply::Packet(std::move(out));
}

}  // namespace backstep::gdbstub
