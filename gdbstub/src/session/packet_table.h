// The packet table: which packets the stub serves, in one list.
//
// Each route names a packet prefix, whether it must match the whole packet,
// the optional Target capability it needs, and its handler. Lookup picks
// the longest matching prefix ("qXfer:auxv:read:" over "q..."). A packet with
// no route, or whose capability the target lacks, is answered "" (unsupported),
// which is how clients probe features.
//
// Handlers have the form `Reply HandleX(Session&, std::string_view args)`,
// `args` being the packet without the route's prefix. Each packet family's
// handlers live in one file of packets/.
//
// Thread-safety: the table is immutable.
#pragma once

#include <span>
#include <string_view>

#include "session/reply.h"

namespace backstep::gdbstub {

class Session;
class Target;

enum class Capability : unsigned char {
  kNone,
  kReverseExecution,
  kBreakpoints,
  kWatchpoints,
  kTraceFrames,
  kMonitorCommands,
  kMemoryMap,
  kHostFiles,
  kAuxv,
  kExecFile,
  kSignals,
};

enum class Match : unsigned char {
  kExact,   // the packet is exactly the prefix ("?", "qC")
  kPrefix,  // the packet starts with it; the rest goes to the handler
};

using Handler = Reply (*)(Session& session, std::string_view args);

struct Route {
  std::string_view prefix;
  Match match;
  Capability capability;
  Handler handler;
};

// Every route, for documentation tests.
std::span<const Route> PacketRoutes();

// The route for `packet` (longest matching prefix), or nullptr.
const Route* FindRoute(std::string_view packet);

bool HasCapability(Target& target, Capability capability);

}  // namespace backstep::gdbstub
