#include "packets/memory.h"

#include <algorithm>

#include "protocol/hex.h"
#include "session/session.h"

namespace backstep::gdbstub {

std::optional<MemoryRange> ParseMemoryRange(std::string_view args) {
  std::size_t comma = args.find(',');
  if (comma == std::string_view::npos) return std::nullopt;
  auto addr = ParseHexU64(args.substr(0, comma));
  auto length = ParseHexU64(args.substr(comma + 1));
  if (!addr || !length) return std::nullopt;
  return MemoryRange{*addr, *length};
}

std::uint64_t ClampReadLength(const MemoryRange& range, std::uint64_t max_bytes) {
  // Bytes from addr to the top of the address space, inclusive; 0 stands for
  // 2^64 when addr == 0, which max_bytes caps anyway.
  std::uint64_t to_end = 0 - range.addr;
  std::uint64_t length = std::min(range.length, max_bytes);
  if (to_end != 0) length = std::min(length, to_end);
  return length;
}

Reply HandleReadMemory(Session& session, std::string_view args) {
  auto range = ParseMemoryRange(args);
  if (!range) return Reply::BadArguments("m: malformed arguments");
  std::uint64_t length = ClampReadLength(*range, session.options().packet_size / 2);
  if (length == 0) return Reply::Packet("");
  auto buffer = session.Scratch(length);
  std::size_t read = session.target().ReadMemory(range->addr, buffer);
  if (read == 0) return Reply::Fail("m: memory not readable");
  std::string out;
  AppendHexBytes(out, buffer.first(std::min<std::size_t>(read, buffer.size())));
  return Reply::Packet(std::move(out));
}

Reply HandleBinaryReadMemory(Session&, std::string_view) {
  // NOTE: "" makes LLDB read with `m` (verified, docs/protocol.md §11). Implementing x
  // means choosing between LLDB's unprefixed replies and GDB's `b` prefix
  // (binary-upload+); nothing needs it yet.
  return Reply::Empty();
}

}  // namespace backstep::gdbstub
