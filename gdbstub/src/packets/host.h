// Process and host description queries (docs/protocol.md §2, §11):
//   qHostInfo     triple:<hex>;ptrsize:8;endian:little;ostype:linux;
//                 watchpoint_exceptions_received:after;      ("" without HostInfo)
//   qProcessInfo  pid:<hex>;triple:<hex>;ostype:linux;endian:little;ptrsize:8;
//                 ("" without HostInfo; the pid is never 0, LLDB rejects it)
//   qSymbol::     OK   (we never need symbol values)
//   qOffsets      ""   (images are not relocated)
#pragma once

#include <string_view>

#include "session/reply.h"

namespace backstep::gdbstub {

class Session;

Reply HandleHostInfo(Session& session, std::string_view args);
Reply HandleProcessInfo(Session& session, std::string_view args);
Reply HandleSymbol(Session& session, std::string_view args);
Reply HandleOffsets(Session& session, std::string_view args);

}  // namespace backstep::gdbstub
