// qMemoryRegionInfo:<addr> (LLDB's `memory region`, its unwinder; docs/protocol.md
// §11), served when the target has a MemoryMap:
//   mapped  start:<hex>;size:<hex>;permissions:rx;name:<hex name>;
//   gap     start:<hex>;size:<hex>;
#pragma once

#include <string_view>

#include "session/reply.h"

namespace backstep::gdbstub {

class Session;
struct MemoryRegion;

// The reply payload for `region`.
std::string FormatMemoryRegion(const MemoryRegion& region);

Reply HandleMemoryRegionInfo(Session& session, std::string_view args);

}  // namespace backstep::gdbstub
