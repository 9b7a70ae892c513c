// What every `backstep` command shares: its result (F4: every command sets
// its return status explicitly, otherwise SB-API callers see a failure;
// errors are one line), the selected target's session, and the trigger of an
// armed move.
//
// Moves are armed in the stub and triggered with
// SBThread::StepInstruction(false), never Continue(): a continue from a
// breakpoint first steps over it and would consume the armed move (F13).
//
// Thread-safety: LLDB's command thread only.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "lldb/API/LLDB.h"
#include "trace_session.h"

namespace backstep::lldb_plugin {

using Args = std::vector<std::string>;

// Sets "backstep: <message>" as the error; returns false.
bool Fail(lldb::SBCommandReturnObject& result, const std::string& message);
// Appends `text` (without its last newline) and succeeds; returns true.
bool Succeed(lldb::SBCommandReturnObject& result, const std::string& text);

// Runs `body` with the debugger synchronous (docs/lldb.md §2.3 rule 2).
template <typename F>
bool Synchronously(lldb::SBDebugger& debugger, F body) {
  const bool was_async = debugger.GetAsync();
  debugger.SetAsync(false);
  bool ok = body();
  debugger.SetAsync(was_async);
  return ok;
}

// The session of the selected target, with a stopped, connected process.
struct Context {
  TraceSession* session = nullptr;
  lldb::SBTarget target;
  lldb::SBProcess process;
  lldb::SBThread thread;
};
// Fills `out`, or fails `result` saying what is missing.
bool GetContext(lldb::SBDebugger& debugger, lldb::SBCommandReturnObject& result, Context& out);

// The stop as LLDB describes it (thread, frame, source), after a move.
std::string StopDescription(lldb::SBThread& thread);

// Selects the thread the stub stopped in, as gdb does: after a step LLDB
// keeps the thread it stepped, though a goto or a reverse-continue may end
// in another one. Returns the selected thread.
lldb::SBThread SelectStopThread(Context& c);

// Triggers the armed move with one instruction step and reports the stop.
bool Trigger(Context& c, lldb::SBCommandReturnObject& result);

// ADDR as a number (core::ParseNumber: 0x-hex or decimal) or an LLDB
// expression (`&counter`, `$rsp + 8`); nullopt with `error` set otherwise.
std::optional<std::uint64_t> Address(Context& c, const std::string& text, std::string& error);

}  // namespace backstep::lldb_plugin
