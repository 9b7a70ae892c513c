// Memory reads: `m<addr>,<len>` and the binary `x<addr>,<len>` (docs/protocol.md §4,
// §11). Writes (M, X) are refused in read_only.h.
//
// `m` answers the hex of the readable prefix, shorter than asked when the
// range runs into unknown or unmapped memory (LLDB reads 0x200-byte aligned
// blocks across mapping ends), and E01 only when the first byte is
// unreadable. The length is capped so that the reply fits in PacketSize:
// `m0,ffffffffffffffff` reads at most PacketSize/2 bytes, never allocating
// more. `x` answers "" so that LLDB falls back to `m` (gdb 13 never sends x).
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

#include "backstep/core/types.h"
#include "session/reply.h"

namespace backstep::gdbstub {

class Session;

struct MemoryRange {
  core::Address addr = 0;
  std::uint64_t length = 0;
  bool operator==(const MemoryRange&) const = default;
};

// "<addr>,<len>", both hex.
std::optional<MemoryRange> ParseMemoryRange(std::string_view args);

// The number of bytes a request may read: `length` capped by the reply
// budget (`max_bytes`) and by the end of the address space.
std::uint64_t ClampReadLength(const MemoryRange& range, std::uint64_t max_bytes);

Reply HandleReadMemory(Session& session, std::string_view args);
Reply HandleBinaryReadMemory(Session& session, std::string_view args);

}  // namespace backstep::gdbstub
