#include "command_support.h"

#include "backstep/core/number.h"
#include "session_registry.h"

namespace backstep::lldb_plugin {
namespace {

// LLDB stops at our `exception` stop reason (stop_reason.h) but keeps the
// instruction-step plans of the trigger on the threads' plan stacks (a
// non-forced discard spares controlling plans): a later `continue` would
// first finish them, one instruction on. Discard them on every thread.
void DiscardStepPlans(Context& c) {
  lldb::SBThread selected = c.process.GetSelectedThread();
  lldb::SBCommandInterpreter interpreter = c.target.GetDebugger().GetCommandInterpreter();
  for (std::uint32_t i = 0; i < c.process.GetNumThreads(); ++i) {
    c.process.SetSelectedThread(c.process.GetThreadAtIndex(i));
    lldb::SBCommandReturnObject ignored;  // fails when only the base plan is left
    interpreter.HandleCommand("thread plan discard 1", ignored);
  }
  c.process.SetSelectedThread(selected);
}

}  // namespace

bool Fail(lldb::SBCommandReturnObject& result, const std::string& message) {
  result.SetError(("backstep: " + message).c_str());
  result.SetStatus(lldb::eReturnStatusFailed);
  return false;
}

bool Succeed(lldb::SBCommandReturnObject& result, const std::string& text) {
  if (!text.empty())
    result.AppendMessage(text.back() == '\n' ? text.substr(0, text.size() - 1).c_str()
                                             : text.c_str());
  result.SetStatus(lldb::eReturnStatusSuccessFinishResult);
  return true;
}

bool GetContext(lldb::SBDebugger& debugger, lldb::SBCommandReturnObject& result, Context& out) {
  Sessions().Sweep(debugger);
  out.target = debugger.GetSelectedTarget();
  out.session = out.target.IsValid() ? Sessions().Find(out.target) : nullptr;
  if (out.session == nullptr) {
    return Fail(result, "no trace in the selected target (use 'backstep open [PROG] TRACE')");
  }
  out.process = out.target.GetProcess();
  if (!out.process.IsValid() || !out.session->serving() ||
      out.process.GetState() != lldb::eStateStopped) {
    return Fail(result, "not connected: the trace's process is gone (open the trace again)");
  }
  out.thread = out.process.GetSelectedThread();
  if (!out.thread.IsValid()) return Fail(result, "no thread selected");
  return true;
}

std::string StopDescription(lldb::SBThread& thread) {
  lldb::SBStream stream;
  thread.GetStatus(stream);
  return std::string(stream.GetData() ? stream.GetData() : "");
}

lldb::SBThread SelectStopThread(Context& c) {
  if (c.session->serving()) c.process.SetSelectedThreadByID(c.session->stop_thread());
  return c.process.GetSelectedThread();
}

bool Trigger(Context& c, lldb::SBCommandReturnObject& result) {
  lldb::SBError error;
  c.thread.StepInstruction(false, error);
  if (error.Fail()) return Fail(result, std::string("step failed: ") + error.GetCString());
  lldb::SBThread thread = SelectStopThread(c);
  if (thread.IsValid() && thread.GetThreadID() != c.thread.GetThreadID() && c.session->serving()) {
    // LLDB keeps the old stop reason of a thread it did not resume: step
    // the stopping thread in place so that its stop says where it is.
    c.session->controller().ArmGoto(c.session->controller().position());
    thread.StepInstruction(false, error);
    if (error.Fail()) return Fail(result, std::string("step failed: ") + error.GetCString());
    thread = SelectStopThread(c);
  }
  DiscardStepPlans(c);
  return Succeed(result, StopDescription(thread));
}

std::optional<std::uint64_t> Address(Context& c, const std::string& text, std::string& error) {
  if (auto n = core::ParseNumber(text)) return n;
  lldb::SBValue value = c.thread.GetSelectedFrame().EvaluateExpression(text.c_str());
  if (!value.IsValid() || value.GetError().Fail()) {
    // LLDB's diagnostic is several lines (source excerpt, caret): keep the first.
    std::string why = value.IsValid() && value.GetError().GetCString()
                          ? value.GetError().GetCString()
                          : "not an address";
    why = why.substr(0, why.find('\n'));
    if (why.rfind("error: ", 0) == 0) why = why.substr(7);
    error = "cannot evaluate '" + text + "': " + why;
    return std::nullopt;
  }
  return value.GetValueAsUnsigned();
}

}  // namespace backstep::lldb_plugin
