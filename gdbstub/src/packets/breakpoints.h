// Breakpoints and watchpoints: Z<t>,<addr>,<kind> / z<t>,<addr>,<kind>
// (docs/protocol.md §4, §6).
//
//   t = 0 software breakpoint, 1 hardware breakpoint   (Breakpoints)
//   t = 2 write, 3 read, 4 access watchpoint            (Watchpoints)
//
// Each type has its own route so the packet table gates it on the right
// capability; a watchpoint kind the target cannot observe (reads, when the
// trace records none) answers "". For breakpoints <kind> is the breakpoint
// size (1 on x86), for watchpoints the watched length. A trailing
// `;cond...` list is ignored: we never advertise ConditionalBreakpoints+,
// so the client evaluates conditions itself. Memory is never patched.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

#include "backstep/core/types.h"
#include "session/reply.h"

namespace backstep::gdbstub {

class Session;

enum class ZType : unsigned char { kSoftware = 0, kHardware, kWrite, kRead, kAccess };

struct BreakpointRequest {
  core::Address addr = 0;
  std::uint64_t kind = 0;
  bool operator==(const BreakpointRequest&) const = default;
};

// The arguments after "Z<t>": ",<addr>,<kind>[;...]".
std::optional<BreakpointRequest> ParseBreakpointArgs(std::string_view args);

Reply HandleBreakpoint(Session& session, ZType type, bool insert, std::string_view args);

// The handler of one route ("Z0", "z3", ...).
template <ZType kType, bool kInsert>
Reply HandleZ(Session& session, std::string_view args) {
  return HandleBreakpoint(session, kType, kInsert, args);
}

}  // namespace backstep::gdbstub
