#include "trace_session.h"

#include <sys/socket.h>
#include <unistd.h>

namespace backstep::lldb_plugin {

core::Expected<std::unique_ptr<TraceSession>> TraceSession::Create(const Options& options) {
  std::unique_ptr<TraceSession> session(new TraceSession);
  session->trace_path_ = options.trace_path;
  core::OpenOptions open_options;
  open_options.map_in_cached_trace = true;  // a session reads the trace at random
  BACKSTEP_ASSIGN_OR_RETURN(std::shared_ptr<core::Trace> trace,
                            core::Trace::Open(options.trace_path, open_options));
  session->trace_ = trace;
  session->event_count_ = trace->event_count();
  BACKSTEP_ASSIGN_OR_RETURN(session->target_options_,
                            gdbstub::ServeOptionsFor(*trace, options.program));
  session->program_ = session->target_options_.exe_path;
  // A pid of its own: LLDB refuses a second connection to a pid that one
  // of its targets debugs ("Process 1 is currently being debugged").
  static std::atomic<std::uint64_t> next_pid{1};
  session->target_options_.pid = next_pid.fetch_add(1);
  return session;
}

core::Expected<int> TraceSession::Start() {
  int fds[2];
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds) != 0) {
    return core::Status::IOError("socketpair failed");
  }
  std::shared_ptr<const core::Trace> trace = trace_;
  gdbstub::TraceTargetOptions options = target_options_;
  auto server = gdbstub::Server::Create(
      [this, trace, options]() -> core::Expected<std::unique_ptr<gdbstub::Target>> {
        BACKSTEP_ASSIGN_OR_RETURN(std::unique_ptr<gdbstub::Target> target,
                                  gdbstub::NewTraceTarget(trace, options));
        target_.store(target.get());
        return target;
      });
  if (!server.ok()) {
    ::close(fds[0]);
    ::close(fds[1]);
    return server.status();
  }
  if (core::Status status = (*server)->ServeFds(fds[0], fds[0]); !status.ok()) {
    ::close(fds[1]);
    return status;
  }
  server_ = std::move(*server);
  io_ = std::thread([this] { Serve(); });
  return fds[1];
}

void TraceSession::Serve() {
  server_->Run();
  // LLDB closed the connection (kill, target delete, exit): the target is
  // gone with it; free the server and, unless another owner remains, the
  // trace and its index.
  target_.store(nullptr);
  finished_.store(true);
  std::lock_guard<std::mutex> lock(server_mutex_);
  server_.reset();
  trace_.reset();
}

TraceSession::~TraceSession() {
  {
    std::lock_guard<std::mutex> lock(server_mutex_);
    if (server_) server_->Stop();
  }
  if (io_.joinable()) io_.join();
}

gdbstub::TraceController& TraceSession::controller() {
  return *gdbstub::AsTraceController(*target_.load());
}

std::uint64_t TraceSession::stop_thread() { return target_.load()->current_thread().value; }

core::Expected<std::string> TraceSession::Monitor(std::string_view command) {
  gdbstub::MonitorCommands* monitor = target_.load()->monitor_commands();
  if (monitor == nullptr) return core::Status::Unsupported("the target has no monitor commands");
  return monitor->RunMonitorCommand(command);
}

}  // namespace backstep::lldb_plugin
