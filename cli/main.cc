// backstep: debug recorded execution traces with gdb and LLDB, backwards too.
#include <algorithm>
#include <cstdio>
#include <string>
#include <string_view>
#include <vector>

#include "backstep/core/format_registry.h"
#include "cli/cli.h"

namespace {

constexpr const char kHelp[] = R"(usage: backstep COMMAND [ARGS]

Commands:
  info TRACE                      format, architecture, events, threads, memory, index status
  index TRACE [--force] [--single-pass]
                                  build (or check) the trace's index; --force rebuilds it;
                                  --single-pass: no parallel parts from a trace.cache
  dump TRACE --at N [--regs] [--mem ADDR LEN]... [--phys] [--thread T]
                                  state at position N (0 = before the first event;
                                  N may also be "end" or a percentage like 50%)
  convert IN -o OUT --to FORMAT   write IN in another format (FORMAT: @WRITABLE@)
  export TRACE -o OUT.tf [--from N] [--to M] [--every K | --at-pc ADDR]... [--mem ADDR:LEN]...
                                  write positions N..M as a gdb trace file for
                                  `target tfile` + tfind (registers, a stack window,
                                  the instruction's memory, the --mem ranges)
  serve TRACE [--port N | --stdio] [--listen ADDR] [--exe PATH] [--sysroot DIR] [--log FILE]
                                  serve TRACE to gdb and LLDB (GDB remote protocol) on
                                  127.0.0.1:1234 (--port 0: a free port, printed on stderr),
                                  or on stdin/stdout: target remote | backstep serve --stdio T;
                                  --sysroot DIR: read the program and libraries the trace
                                  names under DIR; --log FILE records every packet;
                                  --max-connections N (default 64) clients at once;
                                  --busy-wait US (default 200, 0: off) wait awake that
                                  long for the next packet after a reply
  origin TRACE ADDR [LEN] [--at N] [--depth D]
                                  where the bytes at ADDR came from: the write, the
                                  instruction, its source register or memory, recursively
                                  (default: at the end, depth 8)
  record [-o FILE] [--max-insns N] [--no-reads] [--follow parent|child]
         [--engine ptrace|emu|native] [--cpuid native|portable] [--no-vdso]
         [--log LOG] [--log-only] [--snapshot-ms N] [--snapshot-syscalls M]
         [--jobs N] [--crash-first] [--no-syscall-buffer] -- PROG [ARGS]
                                  run PROG under ptrace and record every instruction
                                  into a usercorn trace (default FILE: PROG.ucir);
                                  its memory reads too unless --no-reads; after fork,
                                  the parent (default) or the child; exits with
                                  PROG's status (128+N when signal N killed it);
                                  --engine emu: emulated, ~30x faster (Unicorn; no
                                  threads, signals or reads);
                                  --cpuid portable: the CPUID both engines show;
                                  --no-vdso: clock functions make system calls, as
                                  with --engine emu;
                                  --engine native: PROG runs natively, system calls
                                  and rdtsc are logged (LOG, default FILE.nlog; the
                                  common calls without a stop, through a buffer in
                                  PROG: --no-syscall-buffer turns it off), then the
                                  emu engine materializes the trace from the log,
                                  --jobs intervals between snapshots at once (no
                                  threads or exec); --log-only: stop after the log
  record --engine native --from-log LOG [-o FILE]
                                  materialize a kept log again (same machine)
  help                            this text

Formats (read; those marked "write" also by convert --to):
@FORMATS@
Common options:
  --cache-dir DIR                 where indexes go when the trace's directory is read-only

Errors go to stderr as one line naming the file and offset; the exit status is
1 for errors and 2 for usage mistakes.
)";

// kHelp with the format lists of the registry in place of @WRITABLE@ and
// @FORMATS@, so that help never disagrees with what convert accepts.
std::string HelpText() {
  std::string text = kHelp;
  std::string formats;
  for (const backstep::core::FormatInfo& f : backstep::core::Formats()) {
    std::string line = "  " + std::string(f.name);
    line.resize(std::max<std::size_t>(line.size() + 1, 12), ' ');
    line += (f.create_writer ? "read, write  " : "read         ") + std::string(f.description);
    formats += line + "\n";
  }
  auto replace = [&text](std::string_view marker, const std::string& with) {
    text.replace(text.find(marker), marker.size(), with);
  };
  replace("@WRITABLE@", backstep::core::FormatNames(true));
  replace("@FORMATS@", formats);
  return text;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace backstep::cli;
  if (argc < 2) {
    std::fputs(HelpText().c_str(), stderr);
    return 2;
  }
  std::string_view command = argv[1];
  Args args(std::vector<std::string>(argv + 2, argv + argc));
  InstallInterruptHandler();
  if (command == "help" || command == "--help" || command == "-h") {
    std::fputs(HelpText().c_str(), stdout);
    return 0;
  }
  if (command == "info") return RunInfo(args);
  if (command == "index") return RunIndex(args);
  if (command == "dump") return RunDump(args);
  if (command == "convert") return RunConvert(args);
  if (command == "export") return RunExport(args);
  if (command == "record") return RunRecord(args);
  if (command == "serve") return RunServe(args);
  if (command == "origin") return RunOrigin(args);
  return Usage("unknown command '" + std::string(command) + "'");
}
