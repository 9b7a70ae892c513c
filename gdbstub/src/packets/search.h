// qSearch:memory:<addr>;<len>;<hex pattern> (gdb's `find`): `1,<addr>` for
// the first match in [addr, addr+len), `0` for none (docs/protocol.md §4).
//
// The search reads through Target::ReadMemory in PacketSize chunks. Like
// gdbserver it halts with E01 when it reaches a byte it cannot read before
// finding a match ("Unable to access ... halting search" in gdb), which also
// bounds the work on huge ranges of unknown memory.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "backstep/core/types.h"
#include "session/reply.h"

namespace backstep::gdbstub {

class Session;

struct SearchMemoryRequest {
  core::Address addr = 0;
  std::uint64_t length = 0;
  std::string pattern;  // raw bytes, not empty
};

// Arguments after "qSearch:memory:".
std::optional<SearchMemoryRequest> ParseSearchMemory(std::string_view args);

Reply HandleSearchMemory(Session& session, std::string_view args);

}  // namespace backstep::gdbstub
