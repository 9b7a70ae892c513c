// The recording is read-only (docs/protocol.md §4, §11).
//
// Writes are refused with E01: G, P<n>=<v>, M<addr>,<len>:<hex>,
// X<addr>,<len>:<binary>. Requests to change the inferior that LLDB makes
// optionally are declined with "" (unsupported), which is what makes LLDB
// fall back gracefully:
//   _M<size>,<perm> / _m<addr>   allocate / free inferior memory: with "",
//       LLDB evaluates expressions with its IR interpreter; E01 would make
//       every JIT expression fail ("Couldn't allocate space ...").
//   QSaveRegisterState, QRestoreRegisterState   only used around JIT calls.
// vMustReplyEmpty must be answered "" by definition (gdb's probe).
#pragma once

#include <string_view>

#include "session/reply.h"

namespace backstep::gdbstub {

class Session;

Reply HandleWrite(Session& session, std::string_view args);     // E01
Reply HandleDeclined(Session& session, std::string_view args);  // ""

}  // namespace backstep::gdbstub
