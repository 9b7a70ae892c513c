#include "transport/connection.h"

#include <poll.h>
#include <sched.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <optional>
#include <system_error>

#include "backstep/core/mapping_guard.h"

namespace backstep::gdbstub {
namespace {

constexpr std::size_t kReadChunk = 16384;

void Signal(int fd) {
  std::uint64_t one = 1;
  [[maybe_unused]] ssize_t n = ::write(fd, &one, sizeof one);
}

void Drain(int fd) {
  std::uint64_t value;
  [[maybe_unused]] ssize_t n = ::read(fd, &value, sizeof value);
}

}  // namespace

Connection::Connection(int in_fd, int out_fd, std::unique_ptr<Target> target, int id,
                       PacketLog* log, std::chrono::microseconds busy_wait, ClosedFn on_closed)
    : in_fd_(in_fd),
      out_fd_(out_fd),
      target_(std::move(target)),
      session_(*target_, {}, this),
      id_(id),
      log_(log),
      on_closed_(std::move(on_closed)),
      busy_wait_(BusyWait::Allowed(busy_wait)) {}

Connection::~Connection() {
  for (int fd : {stop_fd_, done_fd_, in_fd_}) {
    if (fd >= 0) ::close(fd);
  }
  if (out_fd_ >= 0 && out_fd_ != in_fd_) ::close(out_fd_);
}

core::Status Connection::Start() {
  stop_fd_ = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  done_fd_ = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (stop_fd_ < 0 || done_fd_ < 0) {
    return core::Status::IOError(std::string("eventfd: ") + std::strerror(errno));
  }
  try {
    thread_ = std::thread([this] { Loop(); });
  } catch (const std::system_error& e) {  // EAGAIN: out of threads or memory
    return core::Status::IOError(std::string("cannot start a thread: ") + e.what());
  }
  return core::Status::Ok();
}

void Connection::RequestStop() {
  stop_.store(true);
  session_.RequestInterrupt();  // a resume in progress returns promptly
  if (stop_fd_ >= 0) Signal(stop_fd_);
}

void Connection::Join() {
  if (thread_.joinable()) thread_.join();
}

void Connection::Loop() {
  std::vector<std::uint8_t> batch;
  while (!stop_.load() && !client_gone_) {
    if (stash_.empty()) {
      pollfd fds[2] = {{in_fd_, POLLIN, 0}, {stop_fd_, POLLIN, 0}};
      if (!WaitForInput(fds)) {
        if (errno == EINTR) continue;
        break;
      }
      if (fds[1].revents != 0) break;
      batch.clear();
      if (!ReadSome(batch)) break;
      if (batch.empty()) continue;  // spurious wake-up
    } else {
      batch.swap(stash_);
      stash_.clear();
    }
    std::vector<std::string> replies = session_.OnBytes(batch);
    // A served file shrank under us (GuardMappedFiles): what these replies
    // say may come from its zero-filled pages; end the session instead.
    if (const std::string damaged = core::MappedFilesDamaged(); !damaged.empty()) {
      if (log_) log_->Note(id_, damaged + " changed while served: closing");
      break;
    }
    std::string out;
    for (std::string& reply : replies) {
      if (log_) log_->Sent(id_, reply);
      // One write per batch: an ack and its reply in one segment.
      if (out.empty()) {
        out = std::move(reply);
      } else {
        out += reply;
      }
    }
    if (!WriteAll(out) || session_.finished()) break;
    replied_ = BusyWait::Clock::now();
  }
  if (log_) log_->Note(id_, "closed");
  if (on_closed_) on_closed_(*this);
}

bool Connection::WaitForInput(pollfd (&fds)[2]) {
  if (busy_wait_.awake()) {
    const auto deadline = busy_wait_.Deadline(replied_);
    while (true) {
      const int n = ::poll(fds, 2, 0);
      if (n != 0) {
        busy_wait_.AfterAwake(n > 0);
        return n > 0;
      }
      if (BusyWait::Clock::now() >= deadline) break;
      // Another task runnable on this CPU (the client itself, on a busy
      // machine) runs first.
      ::sched_yield();
    }
    busy_wait_.AfterAwake(false);
  }
  if (::poll(fds, 2, -1) < 0) return false;
  busy_wait_.AfterSleep(BusyWait::Clock::now() - replied_);
  return true;
}

bool Connection::ReadSome(std::vector<std::uint8_t>& out) {
  std::uint8_t buffer[kReadChunk];
  ssize_t n = ::read(in_fd_, buffer, sizeof buffer);
  if (n < 0 && (errno == EAGAIN || errno == EINTR)) return true;
  if (n <= 0) {
    if (n < 0 && log_) log_->Note(id_, std::string("read error: ") + std::strerror(errno));
    return false;
  }
  std::span<const std::uint8_t> bytes(buffer, static_cast<std::size_t>(n));
  if (log_) log_->Received(id_, bytes);
  out.insert(out.end(), bytes.begin(), bytes.end());
  return true;
}

bool Connection::WriteAll(const std::string& bytes) {
  std::size_t done = 0;
  while (done < bytes.size()) {
    ssize_t n = ::write(out_fd_, bytes.data() + done, bytes.size() - done);
    if (n > 0) {
      done += static_cast<std::size_t>(n);
    } else if (n < 0 && errno == EAGAIN) {
      pollfd fds[2] = {{out_fd_, POLLOUT, 0}, {stop_fd_, POLLIN, 0}};
      if (::poll(fds, 2, -1) < 0 && errno != EINTR) return false;
      if (fds[1].revents != 0) return false;
    } else if (n < 0 && errno == EINTR) {
      continue;
    } else {
      if (log_) log_->Note(id_, std::string("write error: ") + std::strerror(errno));
      return false;
    }
  }
  return true;
}

core::Expected<StopReason> Connection::Run(const Resume& resume) {
  std::optional<core::Expected<StopReason>> result;
  std::thread helper;
  try {
    helper = std::thread([&] {
      result.emplace(resume());
      Signal(done_fd_);
    });
  } catch (const std::system_error& e) {  // out of threads: answer the resume with an error
    return core::Status::IOError(std::string("cannot start the resume's thread: ") + e.what());
  }
  bool watching = !client_gone_;
  bool stopping = false;
  while (true) {
    // Events already acted upon leave the set (a closed client's fd, and the
    // stop event, which stays set for Loop(), would poll as ready forever).
    pollfd fds[3] = {{done_fd_, POLLIN, 0},
                     {stopping ? -1 : stop_fd_, POLLIN, 0},
                     {watching ? in_fd_ : -1, POLLIN, 0}};
    if (::poll(fds, 3, -1) < 0 && errno != EINTR) break;
    if (fds[0].revents != 0) break;
    if (fds[1].revents != 0) {
      stopping = true;
      session_.RequestInterrupt();
    }
    if (fds[2].revents != 0) {
      std::size_t before = stash_.size();
      if (!ReadSome(stash_)) {
        client_gone_ = true;
        watching = false;
        session_.RequestInterrupt();  // nobody waits for the stop reply
      } else if (std::find(stash_.begin() + before, stash_.end(), 0x03) != stash_.end()) {
        // Consumed by this resume: drop the byte so the session does not
        // also keep it pending for the next one (all-stop clients send
        // nothing else while a resume runs).
        stash_.erase(std::remove(stash_.begin() + before, stash_.end(), 0x03), stash_.end());
        session_.RequestInterrupt();
      }
    }
  }
  helper.join();
  Drain(done_fd_);
  return std::move(*result);
}

}  // namespace backstep::gdbstub
