// Attach state and the end of a session (docs/protocol.md §4):
//   qAttached[:<pid>]  1   (we "attached": quitting the client detaches)
//   D, D;<pid>         OK  then the session is finished
//   vKill;<pid>        OK  then the session is finished (extended mode: it
//                          goes on, and the next vRun restarts)
//   k                  X09 (LLDB's kill) then the session is finished
//   !                  OK  extended mode (gdb's `target extended-remote`)
//   vRun;<file>[;args] a stop reply at the first position (Target::Restart);
//                      the program and arguments are the recording's
//   R<xx>              extended mode: restart as vRun, with no reply (the
//                      client asks `?` next); otherwise "" (unsupported)
// Nothing is killed: the recording stays as it is for the next client.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

#include "session/reply.h"

namespace backstep::gdbstub {

class Session;

struct DetachRequest {
  std::optional<std::uint64_t> pid;
};

// The arguments after "D": "" or ";<pid>".
std::optional<DetachRequest> ParseDetach(std::string_view args);

Reply HandleAttached(Session& session, std::string_view args);
Reply HandleDetach(Session& session, std::string_view args);
Reply HandleVKill(Session& session, std::string_view args);
Reply HandleKill(Session& session, std::string_view args);
Reply HandleExtendedMode(Session& session, std::string_view args);
Reply HandleRun(Session& session, std::string_view args);
Reply HandleRestart(Session& session, std::string_view args);

}  // namespace backstep::gdbstub
