#include "cli/stdio_keepalive.h"

#include <unistd.h>

#include <cerrno>
#include <csignal>

namespace backstep::cli {

StdioKeepAlive::StdioKeepAlive(int fd, std::chrono::milliseconds period) {
  // A debugger that went away closes the pipe: the write fails, no signal.
  std::signal(SIGPIPE, SIG_IGN);
  thread_ = std::thread([this, fd, period] { Loop(fd, period); });
}

StdioKeepAlive::~StdioKeepAlive() { Stop(); }

void StdioKeepAlive::Stop() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_ = true;
  }
  stop_wanted_.notify_one();
  if (thread_.joinable()) thread_.join();
}

void StdioKeepAlive::Loop(int fd, std::chrono::milliseconds period) {
  std::unique_lock<std::mutex> lock(mutex_);
  while (!stop_wanted_.wait_for(lock, period, [this] { return stop_; })) {
    ssize_t n;
    do {
      n = ::write(fd, " ", 1);
    } while (n < 0 && errno == EINTR);
    if (n < 0) return;  // the debugger is gone; the server will see it too
  }
}

}  // namespace backstep::cli
