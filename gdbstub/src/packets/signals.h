// Signals of the trace (Target::signals(), capabilities.h):
//   QPassSignals:<sig>[;<sig>]...  the signals a resume does not stop for
//                                  (gdb: `handle SIGx nostop noprint`; LLDB:
//                                  `process handle -s false -n false`); OK
//   QProgramSignals:...            OK and ignored: which signals the program
//                                  would receive does not change a recording
//   QCatchSyscalls:1[;<sysno>]...  stop at the entry and return of these
//                                  system calls (none listed: all); OK
//   QCatchSyscalls:0               stop at none; OK
//   qXfer:siginfo:read::<off>,<len>  the siginfo_t of the signal the last
//                                  stop reported ($_siginfo); E01 otherwise
// Signal numbers are hex, gdb's (protocol/gdb_signals.h), or Linux's for
// LLDB; numbers that name no Linux signal are ignored.
#pragma once

#include <string_view>

#include "session/reply.h"

namespace backstep::gdbstub {

class Session;

Reply HandlePassSignals(Session& session, std::string_view args);
Reply HandleProgramSignals(Session& session, std::string_view args);
Reply HandleCatchSyscalls(Session& session, std::string_view args);
Reply HandleXferSiginfo(Session& session, std::string_view args);

}  // namespace backstep::gdbstub
