// StdioKeepAlive: keeps gdb waiting while `serve --stdio` opens its trace.
//
// gdb's `target remote | backstep serve --stdio TRACE` sends qSupported at
// once and waits `remotetimeout` (2 s) for the acknowledgement, three times,
// then resends and takes the late answers for the next requests' ("Remote
// replied unexpectedly"). Opening a trace whose index must be built first
// (a new trace, or any trace after an index format change) takes longer
// than that beyond ~10^7 events. gdb discards the characters it reads that
// start no packet and no acknowledgement, and each one restarts its timeout
// (remote.c, putpkt_binary and getpkt: "Junk"), so while the trace opens
// this writes a space on stdout every half second. It writes nothing if the
// open takes less than that, and never once a reply may have started: the
// server writes only after Stop() has joined the thread.
//
// Thread-safety: construct, Stop() and destroy on one thread.
#pragma once

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>

namespace backstep::cli {

class StdioKeepAlive {
 public:
  // Writes to `fd` every `period` until Stop().
  explicit StdioKeepAlive(int fd,
                          std::chrono::milliseconds period = std::chrono::milliseconds(500));
  ~StdioKeepAlive();
  StdioKeepAlive(const StdioKeepAlive&) = delete;
  StdioKeepAlive& operator=(const StdioKeepAlive&) = delete;

  // Stops writing and returns once nothing more will be written.
  void Stop();

 private:
  void Loop(int fd, std::chrono::milliseconds period);

  std::mutex mutex_;
  std::condition_variable stop_wanted_;
  bool stop_ = false;
  std::thread thread_;
};

}  // namespace backstep::cli
