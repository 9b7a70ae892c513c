// The moving commands: reverse-stepi, reverse-continue, reverse-finish,
// reverse-next and goto. Each arms its move in the stub's controller and
// triggers it (command_support.h); reverse-continue instead flips the stub's
// direction around one SBProcess::Continue() (not LLDB 22's sticky
// ContinueInDirection, F11).
#include <string>
#include <utility>

#include "commands.h"
#include "line_rows.h"

namespace backstep::lldb_plugin {

bool ReverseStepi(lldb::SBDebugger debugger, const Args& args,
                  lldb::SBCommandReturnObject& result) {
  if (!args.empty()) return Fail(result, "usage: backstep reverse-stepi");
  Context c;
  if (!GetContext(debugger, result, c)) return false;
  return Synchronously(debugger, [&] {
    c.session->controller().ArmReverseStep();
    return Trigger(c, result);
  });
}

bool ReverseContinue(lldb::SBDebugger debugger, const Args& args,
                     lldb::SBCommandReturnObject& result) {
  if (!args.empty()) return Fail(result, "usage: backstep reverse-continue");
  Context c;
  if (!GetContext(debugger, result, c)) return false;
  return Synchronously(debugger, [&] {
    gdbstub::TraceController& controller = c.session->controller();
    controller.SetDirection(core::Direction::kBackward);
    // From a breakpoint LLDB first steps over it (vCont;s): with the
    // direction reversed that step goes backwards too, as it should.
    lldb::SBError error = c.process.Continue();
    controller.SetDirection(core::Direction::kForward);
    if (error.Fail()) return Fail(result, std::string("continue failed: ") + error.GetCString());
    lldb::SBThread thread = SelectStopThread(c);
    return Succeed(result, StopDescription(thread));
  });
}

bool ReverseFinish(lldb::SBDebugger debugger, const Args& args,
                   lldb::SBCommandReturnObject& result) {
  if (!args.empty()) return Fail(result, "usage: backstep reverse-finish");
  Context c;
  if (!GetContext(debugger, result, c)) return false;
  lldb::SBFrame frame = c.thread.GetSelectedFrame();
  if (!frame.IsValid() || c.thread.GetNumFrames() <= frame.GetFrameID() + 1) {
    return Fail(result, "reverse-finish: the selected frame has no caller");
  }
  const lldb::addr_t cfa = frame.GetCFA();
  if (cfa == LLDB_INVALID_ADDRESS || cfa < 8) {
    return Fail(result, "reverse-finish: no frame address (CFA) for the selected frame");
  }
  auto call = c.session->controller().ArmReverseFinish(cfa - 8);
  if (!call.ok()) return Fail(result, "reverse-finish: " + call.status().message());
  return Synchronously(debugger, [&] { return Trigger(c, result); });
}

bool ReverseNext(lldb::SBDebugger debugger, const Args& args, lldb::SBCommandReturnObject& result) {
  if (!args.empty()) return Fail(result, "usage: backstep reverse-next");
  Context c;
  if (!GetContext(debugger, result, c)) return false;
  auto plan = PlanReverseNext(c.target, c.thread);
  if (!plan.ok()) return Fail(result, "reverse-next: " + plan.status().message());
  core::Status armed = c.session->controller().ArmReverseNext(std::move(*plan));
  if (!armed.ok()) return Fail(result, armed.message());
  return Synchronously(debugger, [&] { return Trigger(c, result); });
}

bool Goto(lldb::SBDebugger debugger, const Args& args, lldb::SBCommandReturnObject& result) {
  if (args.size() != 1) return Fail(result, "usage: backstep goto N|P%|end");
  Context c;
  if (!GetContext(debugger, result, c)) return false;
  auto armed = c.session->Monitor("goto " + args[0]);
  if (!armed.ok()) {
    std::string why = armed.status().message();
    if (why.rfind("usage: monitor ", 0) == 0) why = "usage: backstep " + why.substr(15);
    return Fail(result, why);
  }
  return Synchronously(debugger, [&] { return Trigger(c, result); });
}

}  // namespace backstep::lldb_plugin
