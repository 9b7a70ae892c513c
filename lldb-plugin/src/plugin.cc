// libbackstep_lldb.so: `plugin load` entry point and the `backstep` command
// group (docs/lldb.md §2): the table of commands (name, alias, handler,
// help, syntax) and the check that this LLDB is the one the plugin was built
// for. Public SB API only (F1-F3). The handlers: commands.h.
#include <dlfcn.h>
#include <link.h>

#include <cstdio>
#include <cstring>
#include <string>

#include "commands.h"
#include "lldb/API/LLDB.h"
#include "session_registry.h"

namespace backstep::lldb_plugin {
namespace {

#define STRINGIFY2(x) #x
#define STRINGIFY(x) STRINGIFY2(x)
constexpr int kLldbMajor = BACKSTEP_LLDB_MAJOR;

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
        Sessions().Forget(debugger_id);
      },
      nullptr);
  return true;
}
