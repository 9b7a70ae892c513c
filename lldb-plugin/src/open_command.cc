// `backstep open [PROG] TRACE`: a new target whose process is the trace,
// served in-process on a socketpair (trace_session.h) and connected with
// LLDB's own gdb-remote client.
#include <unistd.h>

#include <string>

#include "commands.h"
#include "session_registry.h"

namespace backstep::lldb_plugin {

bool Open(lldb::SBDebugger debugger, const Args& args, lldb::SBCommandReturnObject& result) {
  if (args.empty() || args.size() > 2) return Fail(result, "usage: backstep open [PROG] TRACE");
  TraceSession::Options options;
  options.trace_path = args.back();
  if (args.size() == 2) options.program = args[0];
  if (!options.program.empty() && ::access(options.program.c_str(), R_OK) != 0) {
    return Fail(result, "cannot read program '" + options.program + "'");
  }
  auto session = TraceSession::Create(options);
  if (!session.ok()) return Fail(result, session.status().ToString());
  const std::string& program = (*session)->program();
  lldb::SBError error;
  const bool have_program = !program.empty() && ::access(program.c_str(), R_OK) == 0;
  lldb::SBTarget target = debugger.CreateTarget(have_program ? program.c_str() : "",
                                                "x86_64-pc-linux-gnu", "", true, error);
  if (!target.IsValid()) {
    return Fail(result, std::string("cannot create the target: ") +
                            (error.GetCString() ? error.GetCString() : "unknown error"));
  }
  debugger.SetSelectedTarget(target);
  auto fd = (*session)->Start();
  if (!fd.ok()) {
    debugger.DeleteTarget(target);
    return Fail(result, fd.status().ToString());
  }
  Sessions().Add(SessionEntry{debugger.GetID(), target, std::move(*session)});
  TraceSession& opened = Sessions().Last();
  return Synchronously(debugger, [&] {
    lldb::SBCommandReturnObject connect;
    std::string command = "process connect --plugin gdb-remote fd://" + std::to_string(*fd);
    // The new target's context: by default a command nested in `backstep
    // open` runs in the context of the target selected when it began, and
    // `process connect` refuses to replace that target's live process.
    lldb::SBExecutionContext context(target);
    debugger.GetCommandInterpreter().HandleCommand(command.c_str(), context, connect);
    if (!connect.Succeeded()) {
      std::string why = connect.GetError() ? connect.GetError() : "";
      while (!why.empty() && why.back() == '\n') why.pop_back();
      debugger.DeleteTarget(target);
      Sessions().Sweep(debugger);
      return Fail(result, "cannot connect to the stub: " + why);
    }
    std::string text = "backstep: " + opened.trace_path() + ": " +
                       std::to_string(opened.event_count()) + " events, position 0";
    text += have_program ? ", program " + program : ", no program (symbols unavailable)";
    lldb::SBThread thread = target.GetProcess().GetSelectedThread();
    return Succeed(result, text + "\n" + StopDescription(thread));
  });
}

}  // namespace backstep::lldb_plugin
