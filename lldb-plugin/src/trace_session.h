// TraceSession: one trace opened in LLDB by `backstep open`.
//
// It owns the core::Trace, a gdbstub::Server serving it on one end of a
// socketpair (no TCP port), and the server's I/O thread. LLDB's own
// gdb-remote client is attached to the other end with `process connect
// --plugin gdb-remote fd://N` (docs/lldb.md F12: not SBTarget::ConnectRemote).
// When LLDB closes the connection (process kill, `target delete`, exit) the
// server's last connection ends, Run() returns and the I/O thread frees the
// server and the trace by itself; the destructor stops what is left and
// joins the thread (docs/lldb.md §2.3 rule 4).
//
// The controller (armed moves, monitor commands) is the served TraceTarget,
// called in-process from LLDB's command thread. That is safe because LLDB
// drives the process synchronously: when a command runs, no packet is in
// flight and the session thread is idle (it blocks reading the socket).
//
// Thread-safety: Open/controller()/monitor() from LLDB's command thread; the
// I/O thread only runs the server.
#pragma once

#include <atomic>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "backstep/core/expected.h"
#include "backstep/core/trace.h"
#include "backstep/gdbstub/server.h"
#include "backstep/gdbstub/trace_target.h"

namespace backstep::lldb_plugin {

class TraceSession {
 public:
  struct Options {
    std::string trace_path;
    std::string program;  // empty: from the trace (AT_EXECFN)
  };
  // Opens the trace (building its index if needed) and prepares the server.
  // Errors: the trace's, the program's (SynthesizeAuxv).
  static core::Expected<std::unique_ptr<TraceSession>> Create(const Options& options);
  ~TraceSession();
  TraceSession(const TraceSession&) = delete;
  TraceSession& operator=(const TraceSession&) = delete;

  // Serves the trace on a new socketpair from a thread of its own; returns
  // the client's fd for `process connect fd://N` (LLDB then owns it).
  core::Expected<int> Start();

  // The executable LLDB should load (may be empty).
  const std::string& program() const { return program_; }
  const std::string& trace_path() const { return trace_path_; }
  std::uint64_t event_count() const { return event_count_; }

  // Whether the stub still serves LLDB (false once the connection closed).
  bool serving() const { return target_.load() != nullptr && !finished_.load(); }
  // REQUIRES: serving().
  gdbstub::TraceController& controller();
  // The thread the last stop reply named (gdb makes it current; LLDB keeps
  // the thread it stepped). REQUIRES: serving().
  std::uint64_t stop_thread();
  // Runs a monitor command in-process. REQUIRES: serving().
  core::Expected<std::string> Monitor(std::string_view command);

 private:
  TraceSession() = default;
  void Serve();

  std::string trace_path_, program_;
  std::uint64_t event_count_ = 0;
  std::shared_ptr<const core::Trace> trace_;
  gdbstub::TraceTargetOptions target_options_;
  std::mutex server_mutex_;  // guards server_ between the I/O thread and Stop()
  std::unique_ptr<gdbstub::Server> server_;
  std::thread io_;
  std::atomic<gdbstub::Target*> target_{nullptr};
  std::atomic<bool> finished_{false};
};

}  // namespace backstep::lldb_plugin
