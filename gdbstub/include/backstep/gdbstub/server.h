// Server: serves Targets to gdb and LLDB over TCP, stdio or a connected fd.
//
// Every client gets its own Session and its own Target (made by the
// TargetFactory, e.g. a TraceTarget with its own cursor over one shared
// Trace), so several debuggers can look at one trace at once. Each
// connection is served by a thread of its own in a blocking loop (one thread
// wake-up per packet); a continue runs on a helper thread while the
// connection thread keeps reading, so a client's 0x03 interrupts it
// (docs/protocol.md §6.8). The thread calling Run() accepts clients and handles
// signals.
//
// Transports:
//   ListenTcp("127.0.0.1", 1234)  a listener; port 0 picks a free port
//   ServeFds(0, 1)                 `target remote | backstep serve --stdio T`
//   ServeFds(fd, fd)               one end of a socketpair (the LLDB plugin)
//
// The packet log (ServerOptions::log_path) records every byte received and
// every packet sent, one line each, with a timestamp and the client number.
//
// The implementation (gdbstub/src/transport) is the only code that includes
// Asio. Creating a Server sets SIGPIPE to SIG_IGN (writes to a client that
// went away must fail, not kill the process).
//
// Thread-safety: Stop() may be called from any thread; everything else from
// the thread that calls (or will call) Run().
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "backstep/core/expected.h"
#include "backstep/core/status.h"
#include "backstep/gdbstub/target.h"

namespace backstep::gdbstub {

// Makes the target of a new client. Called on the I/O thread.
using TargetFactory = std::function<core::Expected<std::unique_ptr<Target>>()>;

inline constexpr std::size_t kDefaultMaxConnections = 64;
inline constexpr std::chrono::microseconds kDefaultBusyWait{200};

struct ServerOptions {
  // Where to log packets; empty: no log. The file is truncated.
  std::string log_path;
  // SIGINT and SIGTERM make Run() return (clean shutdown on Ctrl-C).
  bool stop_on_signals = false;
  // Human-readable events ("client 1 connected from 127.0.0.1:40312");
  // called on the I/O thread. Empty: silent.
  std::function<void(const std::string&)> notice;
  // Connections served at once (each has a thread and a cursor); a client
  // beyond it is closed at once, with a notice. A connection whose thread
  // cannot be created (process or memory limits) is refused the same way:
  // the server and the other clients go on.
  std::size_t max_connections = kDefaultMaxConnections;
  // How long a connection thread waits awake for the client's next packet
  // after a reply before it sleeps (transport/busy_wait.h): a step's round
  // trip then costs no wake-up of the server's thread. 0: always sleep.
  std::chrono::microseconds busy_wait = kDefaultBusyWait;
};

class Server {
 public:
  // Errors: IOError if the log cannot be created.
  static core::Expected<std::unique_ptr<Server>> Create(TargetFactory factory,
                                                        ServerOptions options = {});
  // Closes everything left. REQUIRES: Run() is not running (Stop() it and
  // join its thread first).
  ~Server();
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  // Listens on `address` (an IPv4 or IPv6 literal) and `port` (0: a free
  // one); returns the bound port. InvalidArgument for a bad address, IOError
  // when the port is taken. Call before Run().
  core::Expected<std::uint16_t> ListenTcp(const std::string& address, std::uint16_t port);

  // Serves one client on connected descriptors, which the server then owns
  // (in_fd == out_fd for a socket). IOError if they cannot be polled (a
  // regular file). Call before Run() or from the I/O thread.
  core::Status ServeFds(int in_fd, int out_fd);

  // Runs the I/O loop until Stop(), a signal (stop_on_signals), or, with no
  // listener, until the last connection closes.
  void Run();

  // Thread-safe: closes the listener and every connection (interrupting
  // resumes in progress) and makes Run() return.
  void Stop();

  // Connections currently open (thread-safe; for tests and status lines).
  std::size_t connection_count() const;

 private:
  class Impl;
  explicit Server(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace backstep::gdbstub
