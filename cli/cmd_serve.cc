// backstep serve TRACE [--port N | --stdio] [--listen ADDR] [--exe PATH] [--sysroot DIR]
//                      [--log FILE] [--max-connections N] [--busy-wait US]
//
// Serves the trace to gdb and LLDB over the GDB remote protocol: on TCP
// (127.0.0.1:1234 by default; port 0 picks a free one and the line
// "listening on ADDR:PORT" on stderr says which), or on stdin/stdout for
// `target remote | backstep serve --stdio TRACE`. Each client gets its own
// cursor. The auxiliary vector comes from the trace's initial stack (a
// recording), else from --exe's ELF headers; the executable's path (for
// qXfer:exec-file) from --exe, else from the recording (AT_EXECFN). Host I/O
// (vFile) serves the recorded process's /proc files and the files the trace
// names, read under --sysroot DIR for a trace recorded elsewhere. The stub
// hands out the trace's memory to whoever connects, so a non-loopback
// --listen address prints a warning.
#include <fcntl.h>
#include <poll.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>
#include <thread>

#include "backstep/core/mapping_guard.h"
#include "backstep/gdbstub/server.h"
#include "backstep/gdbstub/trace_target.h"
#include "cli/cli.h"
#include "cli/open_trace.h"
#include "cli/stdio_keepalive.h"

namespace backstep::cli {
namespace {

constexpr std::uint16_t kDefaultPort = 1234;

bool IsLoopback(const std::string& address) {
  return address.rfind("127.", 0) == 0 || address == "::1";
}

// Prints a server notice ("client 3 connected ...") on stderr without ever
// blocking: when stderr is a pipe nobody reads (a script that only wanted the
// port), it fills after about a thousand clients, and a blocking write would
// stall the I/O thread and every session with it. A line that does not fit
// is dropped and counted; the next line that fits says how many were.
// Called on the server's I/O thread only.
void NoticeWithoutBlocking(const std::string& text) {
  static std::size_t dropped = 0;
  pollfd out{STDERR_FILENO, POLLOUT, 0};
  if (::poll(&out, 1, 0) != 1 || (out.revents & POLLOUT) == 0) {
    ++dropped;
    return;
  }
  std::string lines;
  if (dropped > 0) {
    lines =
        "backstep: (" + std::to_string(dropped) + " notices dropped: nothing was reading stderr)\n";
  }
  lines += "backstep: " + text + "\n";
  // One write of less than a page: a pipe with room takes it whole.
  if (::write(STDERR_FILENO, lines.data(), lines.size()) > 0) dropped = 0;
}

std::string HostPort(const std::string& address, std::uint16_t port) {
  bool v6 = address.find(':') != std::string::npos;
  return (v6 ? "[" + address + "]" : address) + ":" + std::to_string(port);
}

// gdb's `target remote | CMD` reads CMD's stderr pipe after every byte of
// every reply (one read() per byte, EAGAIN while the pipe is open): with
// stderr open, a software watchpoint's step-by-step reverse-continue ran ~7x
// slower than over TCP. Once serving, nothing is printed on stderr in
// --stdio mode, so point it at /dev/null: gdb sees end-of-file once and
// stops polling. Errors from then on reach the debugger as closed
// connections; --log records the packets.
void DetachStderrFromDebugger() {
  int null_fd = ::open("/dev/null", O_WRONLY | O_CLOEXEC);
  if (null_fd < 0) return;
  ::dup2(null_fd, STDERR_FILENO);
  ::close(null_fd);
}

// BACKSTEP_TEST_SLOW_OPEN_MS=N: sleep N ms before opening the trace, as a
// large trace's first open (its index build) takes. For the tests of the
// --stdio keepalive (tests/e2e/test_gdb.py): no trace is that slow to open
// on every machine.
void DelayOpenForTests() {
  const char* text = std::getenv("BACKSTEP_TEST_SLOW_OPEN_MS");
  if (text == nullptr) return;
  if (auto ms = ParseNumber(text); ms && *ms <= 600000) {
    std::this_thread::sleep_for(std::chrono::milliseconds(*ms));
  }
}

}  // namespace

int RunServe(Args& args) {
  std::optional<std::string> port_text = args.TakeOption("port");
  std::optional<std::string> listen = args.TakeOption("listen");
  std::optional<std::string> exe = args.TakeOption("exe");
  std::optional<std::string> sysroot = args.TakeOption("sysroot");
  std::optional<std::string> log = args.TakeOption("log");
  bool stdio = args.TakeFlag("stdio");
  std::optional<std::string> cache_dir = args.TakeOption("cache-dir");
  std::optional<std::string> max_connections = args.TakeOption("max-connections");
  std::optional<std::string> busy_wait = args.TakeOption("busy-wait");
  auto files = args.Positionals();
  if (files.size() != 1) return Usage("serve takes one trace file");
  if (auto problem = args.Problem()) return Usage(*problem);
  if (stdio && (port_text || listen)) return Usage("--stdio excludes --port and --listen");
  std::uint16_t port = kDefaultPort;
  if (port_text) {
    auto n = ParseNumber(*port_text);
    if (!n || *n > 65535) return Usage("--port takes a number from 0 to 65535");
    port = static_cast<std::uint16_t>(*n);
  }
  std::optional<std::uint64_t> busy_wait_us;
  if (busy_wait) {
    busy_wait_us = ParseNumber(*busy_wait);
    if (!busy_wait_us || *busy_wait_us > 100000) {
      return Usage("--busy-wait takes microseconds from 0 to 100000");
    }
  }
  std::string address = listen.value_or("127.0.0.1");
  if (address == "localhost") address = "127.0.0.1";

  Args open_args(cache_dir ? std::vector<std::string>{"--cache-dir", *cache_dir}
                           : std::vector<std::string>{});
  // gdb gives up on a --stdio server that takes more than ~6 s to answer
  // its first packet: keep it waiting while the trace (and its index) opens.
  std::optional<StdioKeepAlive> keepalive;
  if (stdio) keepalive.emplace(STDOUT_FILENO);
  DelayOpenForTests();
  // A trace truncated while served ends its sessions, not the server.
  core::GuardMappedFiles();
  core::OpenOptions open_options;
  open_options.map_in_cached_trace = true;  // a session reads the trace at random
  auto trace = OpenTraceForCli(files[0], open_args, std::move(open_options));
  if (!trace.ok()) return Fail(trace.status());
  if (Interrupted()) return 1;

  auto target_options = gdbstub::ServeOptionsFor(**trace, exe.value_or(""));
  if (!target_options.ok()) return Fail(target_options.status());
  if (sysroot) target_options->sysroot = *sysroot;
  std::shared_ptr<const core::Trace> shared = *trace;
  gdbstub::ServerOptions options;
  options.stop_on_signals = true;
  if (max_connections) {
    auto n = ParseNumber(*max_connections);
    if (!n || *n == 0 || *n > 4096) return Usage("--max-connections takes a number from 1 to 4096");
    options.max_connections = static_cast<std::size_t>(*n);
  }
  if (busy_wait_us) options.busy_wait = std::chrono::microseconds(*busy_wait_us);
  if (log) options.log_path = *log;
  if (!stdio) {
    // In --stdio mode stderr is the debugger's console: stay quiet there.
    options.notice = NoticeWithoutBlocking;
  }
  auto server = gdbstub::Server::Create(
      [shared, options = *target_options] { return gdbstub::NewTraceTarget(shared, options); },
      options);
  if (!server.ok()) return Fail(server.status());

  if (stdio) {
    if (keepalive) keepalive->Stop();
    int in = ::dup(STDIN_FILENO), out = ::dup(STDOUT_FILENO);
    if (auto status = (*server)->ServeFds(in, out); !status.ok()) {
      return Fail(core::Status::IOError("--stdio: " + status.ToString()));
    }
    DetachStderrFromDebugger();
  } else {
    auto bound = (*server)->ListenTcp(address, port);
    if (!bound.ok()) return Fail(bound.status());
    if (!IsLoopback(address)) {
      std::fprintf(stderr,
                   "backstep: warning: listening on %s: anyone who can reach it can read the "
                   "trace's memory and registers\n",
                   address.c_str());
    }
    std::fprintf(stderr, "listening on %s\n", HostPort(address, *bound).c_str());
    const std::string_view arch = shared->arch().name();
    std::fprintf(stderr,
                 "  gdb:  set architecture %.*s\n"
                 "        target remote %s\n"
                 "  lldb: gdb-remote %s\n",
                 static_cast<int>(arch.size()), arch.data(), HostPort(address, *bound).c_str(),
                 HostPort(address, *bound).c_str());
    std::fflush(stderr);
  }
  (*server)->Run();
  return 0;
}

}  // namespace backstep::cli
