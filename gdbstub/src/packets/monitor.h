// qRcmd,<hex command> (gdb `monitor ...`, LLDB `process plugin packet
// monitor ...`; docs/protocol.md §12): the target's console output as `O<hex>`
// packets, then `OK`, or an `E` reply. Routed only when the target has
// MonitorCommands.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "session/reply.h"

namespace backstep::gdbstub {

class Session;

// The command text of "qRcmd," arguments (hex-encoded ASCII).
std::optional<std::string> ParseMonitorCommand(std::string_view args);

Reply HandleMonitorCommand(Session& session, std::string_view args);

}  // namespace backstep::gdbstub
