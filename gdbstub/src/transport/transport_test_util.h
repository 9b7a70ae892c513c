// Raw-socket clients and a background server for the transport tests. No
// Asio here: the tests talk to the server the way gdb does, through a socket.
//
// Thread-safety: a TestClient is used by one thread; ServerThread::Stop() may
// be called from any thread.
#pragma once

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <memory>
#include <optional>
#include <string>
#include <thread>

#include "backstep/gdbstub/server.h"

namespace backstep::gdbstub::testing {

inline std::string Frame(std::string_view payload) {
  unsigned sum = 0;
  for (unsigned char c : payload) sum += c;
  char tail[8];
  std::snprintf(tail, sizeof tail, "#%02x", sum & 0xff);
  return "$" + std::string(payload) + tail;
}

inline std::string HexOf(std::string_view text) {
  std::string out;
  char buf[4];
  for (unsigned char c : text) {
    std::snprintf(buf, sizeof buf, "%02x", c);
    out += buf;
  }
  return out;
}

// One client connection (TCP, or one end of a socketpair).
class TestClient {
 public:
  explicit TestClient(int fd) : fd_(fd) {}
  ~TestClient() {
    if (fd_ >= 0) ::close(fd_);
  }
  static std::unique_ptr<TestClient> Connect(std::uint16_t port) {
    int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(port);
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
      ::close(fd);
      return nullptr;
    }
    int one = 1;
    ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    return std::make_unique<TestClient>(fd);
  }

  void SendRaw(std::string_view bytes) {
    ASSERT_EQ(::write(fd_, bytes.data(), bytes.size()), static_cast<ssize_t>(bytes.size()));
  }
  void Send(std::string_view payload) { SendRaw(Frame(payload)); }

  // The next packet's payload (acks skipped); nullopt on timeout or EOF.
  std::optional<std::string> Read(std::chrono::milliseconds timeout = std::chrono::seconds(10)) {
    auto deadline = std::chrono::steady_clock::now() + timeout;
    while (true) {
      std::size_t start = buffer_.find('$');
      if (start != std::string::npos) {
        std::size_t hash = buffer_.find('#', start);
        if (hash != std::string::npos && hash + 2 < buffer_.size()) {
          std::string payload = buffer_.substr(start + 1, hash - start - 1);
          buffer_.erase(0, hash + 3);
          return payload;
        }
      }
      auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
          deadline - std::chrono::steady_clock::now());
      if (left.count() <= 0) return std::nullopt;
      pollfd p{fd_, POLLIN, 0};
      if (::poll(&p, 1, static_cast<int>(left.count())) <= 0) return std::nullopt;
      char chunk[4096];
      ssize_t n = ::read(fd_, chunk, sizeof chunk);
      if (n <= 0) return std::nullopt;
      buffer_.append(chunk, static_cast<std::size_t>(n));
    }
  }
  // True when the server closed the connection within `timeout`.
  bool ClosedByPeer(std::chrono::milliseconds timeout = std::chrono::seconds(10)) {
    pollfd p{fd_, POLLIN, 0};
    if (::poll(&p, 1, static_cast<int>(timeout.count())) <= 0) return false;
    char c;
    return ::read(fd_, &c, 1) == 0;
  }
  // Sends a packet and returns the reply.
  std::string Ask(std::string_view payload) {
    Send(payload);
    return Read().value_or("<timeout>");
  }
  // QStartNoAckMode, then no more acks.
  void NoAck() { EXPECT_EQ(Ask("QStartNoAckMode"), "OK"); }

 private:
  int fd_;
  std::string buffer_;
};

// A Server running on a background thread.
class ServerThread {
 public:
  explicit ServerThread(std::unique_ptr<Server> server) : server_(std::move(server)) {}
  ~ServerThread() { Stop(); }
  void Start() {
    thread_ = std::thread([this] { server_->Run(); });
  }
  void Stop() {
    if (!thread_.joinable()) return;
    server_->Stop();
    thread_.join();
  }
  void Join() { thread_.join(); }
  Server& server() { return *server_; }

 private:
  std::unique_ptr<Server> server_;
  std::thread thread_;
};

}  // namespace backstep::gdbstub::testing
