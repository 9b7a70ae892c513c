// Connection: one client over a pair of connected descriptors.
//
// Threads: the I/O thread (Asio) reads and writes the descriptors; a worker
// thread owned by the connection runs Session::OnBytes on the bytes the I/O
// thread hands it, one batch at a time. While a batch is being processed the
// I/O thread keeps reading and queues what arrives; a 0x03 that arrives
// while a batch is in flight and nothing else is queued is meant for that
// batch (gdb sends nothing else while it waits for a stop reply), so it
// becomes Session::RequestInterrupt() at once; a long reverse-continue stops
// within one poll of core::RunUntil. When the batch's replies come back the
// interrupt is cleared: an interrupt that raced with the stop reply is
// answered by that stop reply.
//
// Lifetime: held by shared_ptr (the Server's set, and every pending Asio
// handler). Close() interrupts and joins the worker, closes the
// descriptors and tells the server; it is idempotent.
//
// Thread-safety: every method except the worker loop runs on the I/O thread.
#pragma once

#include <array>
#include <boost/asio/io_context.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "backstep/gdbstub/target.h"
#include "session/session.h"
#include "transport/packet_log.h"

namespace backstep::gdbstub {

class Connection : public std::enable_shared_from_this<Connection> {
 public:
  using ClosedFn = std::function<void(Connection&)>;

  // Takes ownership of the descriptors (in_fd == out_fd: one socket).
  // `log` may be null; it must outlive the connection.
  Connection(boost::asio::io_context& io, int in_fd, int out_fd, std::unique_ptr<Target> target,
             int id, PacketLog* log, ClosedFn on_closed);
  ~Connection();
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  // Assigns the descriptors to the I/O loop and starts reading. IOError if a
  // descriptor cannot be polled (regular files).
  core::Status Start();
  void Close();
  int id() const { return id_; }

 private:
  void ReadMore();
  void OnRead(const boost::system::error_code& error, std::size_t length);
  void HandOver();
  void WorkerLoop();
  void OnProcessed(std::string replies, bool finished);
  void WriteMore();
  boost::asio::posix::stream_descriptor& out() { return out_ ? *out_ : in_; }

  boost::asio::io_context& io_;
  int in_fd_, out_fd_;
  boost::asio::posix::stream_descriptor in_;
  std::optional<boost::asio::posix::stream_descriptor> out_;  // when not in_'s descriptor
  std::unique_ptr<Target> target_;
  Session session_;
  const int id_;
  PacketLog* log_;
  ClosedFn on_closed_;

  // I/O thread state.
  std::array<std::uint8_t, 16384> read_buffer_{};
  std::vector<std::uint8_t> pending_;  // received, not yet handed to the worker
  bool busy_ = false;                  // a batch is with the worker
  bool closed_ = false;
  bool finishing_ = false;  // the session ended (D, k): close once written
  std::deque<std::string> write_queue_;
  bool writing_ = false;

  // Hand-over to the worker.
  std::mutex mutex_;
  std::condition_variable wake_;
  std::vector<std::uint8_t> batch_;
  bool has_batch_ = false;
  bool quit_ = false;
  std::thread worker_;
};

}  // namespace backstep::gdbstub
