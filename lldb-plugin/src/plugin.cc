// libbackstep_lldb.so: `plugin load` entry point and the `backstep` command
// group (docs/lldb.md §2). Public SB API only (F1-F3).
//
// Every command sets its return status explicitly (F4: otherwise SB-API
// callers see a failure); errors are one line. Moves are armed in the stub
// and triggered with SBThread::StepInstruction(false) (never Continue(): a
// continue from a breakpoint first steps over it and would consume the
// armed move, F13); reverse-continue flips the stub's direction around one
// SBProcess::Continue() (not LLDB 22's sticky ContinueInDirection, F11).
#include <dlfcn.h>
#include <link.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "line_rows.h"
#include "lldb/API/LLDB.h"
#include "trace_session.h"

namespace backstep::lldb_plugin {
namespace {

#define STRINGIFY2(x) #x
#define STRINGIFY(x) STRINGIFY2(x)
constexpr int kLldbMajor = BACKSTEP_LLDB_MAJOR;

using Args = std::vector<std::string>;

// The sessions of this LLDB process, one per target (a process may hold
// several debuggers: the SB API).
struct Entry {
  lldb::user_id_t debugger_id;
  lldb::SBTarget target;
  std::unique_ptr<TraceSession> session;
};
struct Registry {
  std::vector<Entry> sessions;

  // Forgets the sessions of targets LLDB deleted (their stub stopped when
  // the connection closed; this joins the thread). A session whose process
  // was killed stays, to say "not connected".
  void Sweep(lldb::SBDebugger& debugger) {
    for (auto it = sessions.begin(); it != sessions.end();) {
      if (it->debugger_id == debugger.GetID() &&
          debugger.GetIndexOfTarget(it->target) == UINT32_MAX) {
        it = sessions.erase(it);
      } else {
        ++it;
      }
    }
  }
  TraceSession* Find(lldb::SBTarget target) {
    for (Entry& e : sessions) {
      if (e.target == target) return e.session.get();
    }
    return nullptr;
  }
  // Stops the stubs of a debugger being destroyed and joins their threads.
  void Forget(lldb::user_id_t debugger_id) {
    std::erase_if(sessions, [&](const Entry& e) { return e.debugger_id == debugger_id; });
  }
};

Registry& registry() {
  static Registry* r = new Registry;  // never destroyed: LLDB may outlive static destructors
  return *r;
}

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

bool GetContext(lldb::SBDebugger& debugger, lldb::SBCommandReturnObject& result, Context& out) {
  registry().Sweep(debugger);
  out.target = debugger.GetSelectedTarget();
  out.session = out.target.IsValid() ? registry().Find(out.target) : nullptr;
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

// The stop as LLDB describes it (thread, frame, source), after a move.
std::string StopDescription(lldb::SBThread& thread) {
  lldb::SBStream stream;
  thread.GetStatus(stream);
  return std::string(stream.GetData() ? stream.GetData() : "");
}

// Selects the thread the stub stopped in, as gdb does: after a step LLDB
// keeps the thread it stepped, though a goto or a reverse-continue may end
// in another one. Returns the selected thread.
lldb::SBThread SelectStopThread(Context& c) {
  if (c.session->serving()) c.process.SetSelectedThreadByID(c.session->stop_thread());
  return c.process.GetSelectedThread();
}

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

// Triggers the armed move with one instruction step and reports the stop.
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

std::optional<std::uint64_t> ParseUnsigned(const std::string& text) {
  if (text.empty()) return std::nullopt;
  char* end = nullptr;
  errno = 0;
  unsigned long long v = std::strtoull(text.c_str(), &end, 0);
  if (errno != 0 || *end != '\0' || text[0] == '-') return std::nullopt;
  return v;
}

// ADDR as a number or an LLDB expression (`&counter`, `$rsp + 8`).
std::optional<std::uint64_t> Address(Context& c, const std::string& text, std::string& error) {
  if (auto n = ParseUnsigned(text)) return n;
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

// ---- Commands

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
  registry().sessions.push_back(Entry{debugger.GetID(), target, std::move(*session)});
  TraceSession& opened = *registry().sessions.back().session;
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
      registry().Sweep(debugger);
      return Fail(result, "cannot connect to the stub: " + why);
    }
    std::string text = "backstep: " + opened.trace_path() + ": " +
                       std::to_string(opened.event_count()) + " events, position 0";
    text += have_program ? ", program " + program : ", no program (symbols unavailable)";
    lldb::SBThread thread = target.GetProcess().GetSelectedThread();
    return Succeed(result, text + "\n" + StopDescription(thread));
  });
}

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

// when, info, history, last-write: answered by the stub's monitor commands.
bool Query(lldb::SBDebugger debugger, const std::string& name, const Args& args, std::size_t min,
           std::size_t max, const char* usage, bool address, lldb::SBCommandReturnObject& result) {
  // `--max N` (history) goes to the monitor command as it is.
  Args positional;
  std::string max_option;
  for (std::size_t i = 0; i < args.size(); ++i) {
    if (args[i] != "--max" || std::string_view(usage).find("--max") == std::string_view::npos) {
      positional.push_back(args[i]);
      continue;
    }
    auto n = i + 1 < args.size() ? ParseUnsigned(args[i + 1]) : std::nullopt;
    if (!n || *n == 0) return Fail(result, std::string("usage: ") + usage);
    max_option = " --max " + std::to_string(*n);
    ++i;
  }
  if (positional.size() < min || positional.size() > max)
    return Fail(result, std::string("usage: ") + usage);
  Context c;
  if (!GetContext(debugger, result, c)) return false;
  std::string command = name;
  for (std::size_t i = 0; i < positional.size(); ++i) {
    const std::string& arg = positional[i];
    if (address && i < 2) {
      std::string error;
      auto value = i == 0 ? Address(c, arg, error) : ParseUnsigned(arg);
      if (!value || (i == 1 && *value == 0)) {
        return Fail(result, error.empty() ? std::string("usage: ") + usage : error);
      }
      command += " " + std::to_string(*value);
    } else {
      command += " " + arg;
    }
  }
  auto out = c.session->Monitor(command + max_option);
  if (!out.ok()) return Fail(result, out.status().message());
  return Succeed(result, *out);
}

// ---- Registration

using Handler = bool (*)(lldb::SBDebugger, const Args&, lldb::SBCommandReturnObject&);

class Command : public lldb::SBCommandPluginInterface {
 public:
  explicit Command(Handler handler) : handler_(handler) {}
  bool DoExecute(lldb::SBDebugger debugger, char** command,
                 lldb::SBCommandReturnObject& result) override {
    Args args;
    for (char** arg = command; arg && *arg; ++arg) args.emplace_back(*arg);
    return handler_(debugger, args, result);
  }

 private:
  Handler handler_;
};

struct CommandSpec {
  const char* name;
  const char* alias;
  Handler handler;
  const char* help;
  const char* syntax;
};

const CommandSpec kCommands[] = {
    {"open", nullptr, Open,
     "Open a recorded trace in a new target: serve it in-process on a socketpair and connect "
     "LLDB's gdb-remote client to it. PROG defaults to the program the trace recorded.",
     "backstep open [PROG] TRACE"},
    {"reverse-stepi", "rsi", ReverseStepi, "Go back one instruction.", "backstep reverse-stepi"},
    {"reverse-next", "rn", ReverseNext,
     "Go back to the start of the previous source line of this frame, over calls (gdb's "
     "reverse-next, computed from LLDB's line tables, one stop).",
     "backstep reverse-next"},
    {"reverse-finish", nullptr, ReverseFinish,
     "Go back to the call of the selected frame's function, in its caller.",
     "backstep reverse-finish"},
    {"reverse-continue", "rc", ReverseContinue,
     "Run backwards to the previous breakpoint or watchpoint hit, or the start of the trace.",
     "backstep reverse-continue"},
    {"goto", nullptr, Goto, "Go to trace position N, to P% of the trace, or to its end.",
     "backstep goto N|P%|end"},
    {"when", nullptr,
     [](lldb::SBDebugger d, const Args& a, lldb::SBCommandReturnObject& r) {
       return Query(d, "when", a, 0, 0, "backstep when", false, r);
     },
     "Print the current trace position.", "backstep when"},
    {"info", nullptr,
     [](lldb::SBDebugger d, const Args& a, lldb::SBCommandReturnObject& r) {
       return Query(d, "info", a, 0, 0, "backstep info", false, r);
     },
     "Print the trace's facts: format, events, threads, position, index.", "backstep info"},
    {"history", nullptr,
     [](lldb::SBDebugger d, const Args& a, lldb::SBCommandReturnObject& r) {
       return Query(d, "history", a, 1, 2, "backstep history ADDR [LEN] [--max N]", true, r);
     },
     "List every recorded access to [ADDR, ADDR+LEN) (LEN defaults to 1), oldest first, at "
     "most N (default 50). ADDR may be an expression such as &counter.",
     "backstep history ADDR [LEN] [--max N]"},
    {"last-write", nullptr,
     [](lldb::SBDebugger d, const Args& a, lldb::SBCommandReturnObject& r) {
       return Query(d, "last-write", a, 1, 2, "backstep last-write ADDR [LEN]", true, r);
     },
     "Print the last write to [ADDR, ADDR+LEN) before the current position. ADDR may be an "
     "expression such as &counter.",
     "backstep last-write ADDR [LEN]"},
};

// A plugin linked against one LLDB major crashes in another (docs/lldb.md F5).
// A liblldb of another major in the process is the sign (the plugin's own
// dependency is then loaded too, and might never be reached if the
// executable's comes first); say so before any SB call.
struct Foreign {
  std::string path;
  int major = 0;
};
Foreign ForeignLldbLoaded() {
  Foreign found;
  dl_iterate_phdr(
      [](dl_phdr_info* info, size_t, void* data) {
        const char* name = info->dlpi_name ? std::strrchr(info->dlpi_name, '/') : nullptr;
        name = name ? name + 1 : info->dlpi_name;
        int major = 0;
        if (name && std::sscanf(name, "liblldb-%d.so", &major) == 1 && major != kLldbMajor) {
          *static_cast<Foreign*>(data) = Foreign{info->dlpi_name, major};
        }
        return 0;
      },
      &found);
  return found;
}

}  // namespace
}  // namespace backstep::lldb_plugin

namespace lldb {
__attribute__((visibility("default"))) bool PluginInitialize(lldb::SBDebugger debugger);
}

bool lldb::PluginInitialize(lldb::SBDebugger debugger) {
  using namespace backstep::lldb_plugin;
  if (Foreign other = ForeignLldbLoaded(); !other.path.empty()) {
    std::fprintf(stderr,
                 "error: libbackstep_lldb.so was built for LLDB %d, but this is LLDB %d (%s): "
                 "rebuild the plugin against liblldb-%d-dev\n",
                 kLldbMajor, other.major, other.path.c_str(), other.major);
    return false;
  }
  const char* version = lldb::SBDebugger::GetVersionString();
  int major = 0;
  if (version && std::sscanf(version, "lldb version %d", &major) == 1 && major != kLldbMajor) {
    std::fprintf(stderr,
                 "error: libbackstep_lldb.so was built for LLDB %d, this is %s: rebuild the "
                 "plugin against liblldb-%d-dev\n",
                 kLldbMajor, version, major);
    return false;
  }
  lldb::SBCommandInterpreter interpreter = debugger.GetCommandInterpreter();
  if (interpreter.CommandExists("backstep")) return true;  // loaded twice
  lldb::SBCommand group = interpreter.AddMultiwordCommand(
      "backstep",
      "Debug a recorded execution trace backwards and forwards (backstep, LLDB " STRINGIFY(
          BACKSTEP_LLDB_MAJOR) " plugin).");
  if (!group.IsValid()) return false;
  for (const CommandSpec& spec : kCommands) {
    group.AddCommand(spec.name, new Command(spec.handler), spec.help, spec.syntax);
  }
  // The short names work inside the group (`backstep rsi`) and alone (`rsi`).
  for (const CommandSpec& spec : kCommands) {
    if (spec.alias == nullptr) continue;
    std::string help = std::string("Same as 'backstep ") + spec.name + "'.";
    group.AddCommand(spec.alias, new Command(spec.handler), help.c_str(), spec.syntax);
  }
  lldb::SBCommandReturnObject ignored;
  for (const CommandSpec& spec : kCommands) {
    if (spec.alias == nullptr) continue;
    std::string alias = std::string("command alias ") + spec.alias + " backstep " + spec.name;
    interpreter.HandleCommand(alias.c_str(), ignored);
  }
  debugger.AddDestroyCallback(
      [](lldb::user_id_t debugger_id, void*) {
        // Stop the debugger's stubs and join their threads while LLDB is
        // still alive (docs/lldb.md §2.3 rule 4).
        registry().Forget(debugger_id);
      },
      nullptr);
  return true;
}
