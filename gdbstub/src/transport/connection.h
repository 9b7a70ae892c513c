// Connection: one client over a pair of connected descriptors, served by a
// thread of its own.
//
// The thread reads what the client sends, feeds it to the client's Session
// and writes the replies back, in a plain blocking loop. After a reply it
// waits for the next packet awake for a while (busy_wait.h), so that a
// stepping client's round trips cost no wake-up of this thread; then it
// sleeps in poll(2) (docs/protocol.md §7). While a continue is computed on a helper
// thread (the connection is its session's ResumeRunner, resume_runner.h), the
// connection thread keeps reading: a 0x03 becomes Session::RequestInterrupt()
// at once, other bytes wait for the session. Closing (client EOF, `D`/`k`, a
// write error, RequestStop()) ends the thread and calls `on_closed` from it.
//
// No Asio here: the descriptors may be a TCP socket, a socketpair end or
// stdin/stdout, and poll(2) serves them all.
//
// Thread-safety: Start() and Join() from the owner's thread; RequestStop()
// from any thread; everything else runs on the connection's thread.
#pragma once

#include <poll.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "backstep/core/status.h"
#include "backstep/gdbstub/target.h"
#include "session/resume_runner.h"
#include "session/session.h"
#include "transport/busy_wait.h"
#include "transport/packet_log.h"

namespace backstep::gdbstub {

class Connection final : public ResumeRunner {
 public:
  using ClosedFn = std::function<void(Connection&)>;

  // Takes ownership of the descriptors (in_fd == out_fd: one socket) and the
  // target. `log` may be null and must outlive the connection. `busy_wait`:
  // the awake wait's budget (0: none). `on_closed` runs on the connection's
  // thread as its last action.
  Connection(int in_fd, int out_fd, std::unique_ptr<Target> target, int id, PacketLog* log,
             std::chrono::microseconds busy_wait, ClosedFn on_closed);
  ~Connection() override;  // REQUIRES: Join()ed, or never started
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  // Starts the thread. IOError if the stop event cannot be created.
  core::Status Start();
  // Thread-safe: interrupts a resume in progress and ends the thread soon.
  void RequestStop();
  void Join();
  int id() const { return id_; }

  // ResumeRunner (called by the session for continues and range steps):
  // runs `resume` on a helper thread while this thread watches the client
  // for 0x03, EOF and RequestStop().
  core::Expected<StopReason> Run(const Resume& resume) override;

 private:
  void Loop();
  // Waits until the client or the stop event has something: awake first if
  // busy_wait_ says so. False on a poll error.
  bool WaitForInput(pollfd (&fds)[2]);
  // Reads what is available into `out`; false on EOF or a read error.
  bool ReadSome(std::vector<std::uint8_t>& out);
  bool WriteAll(const std::string& bytes);

  int in_fd_, out_fd_;
  int stop_fd_ = -1;  // eventfd: RequestStop()
  int done_fd_ = -1;  // eventfd: a watched resume finished
  std::unique_ptr<Target> target_;
  Session session_;
  const int id_;
  PacketLog* log_;
  ClosedFn on_closed_;
  BusyWait busy_wait_;
  BusyWait::Clock::time_point replied_;  // end of the last reply's write
  std::vector<std::uint8_t> stash_;      // read while a resume ran; not yet fed
  bool client_gone_ = false;             // EOF seen while watching a resume
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

}  // namespace backstep::gdbstub
