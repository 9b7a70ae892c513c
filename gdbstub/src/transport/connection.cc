#include "transport/connection.h"

#include <unistd.h>

#include <algorithm>
#include <boost/asio/buffer.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/write.hpp>

namespace backstep::gdbstub {

namespace asio = boost::asio;

Connection::Connection(asio::io_context& io, int in_fd, int out_fd, std::unique_ptr<Target> target,
                       int id, PacketLog* log, ClosedFn on_closed)
    : io_(io),
      in_fd_(in_fd),
      out_fd_(out_fd),
      in_(io),
      target_(std::move(target)),
      session_(*target_),
      id_(id),
      log_(log),
      on_closed_(std::move(on_closed)) {}

Connection::~Connection() {
  // Close() normally ran; this covers a connection that never started.
  {
    std::lock_guard<std::mutex> lock(mutex_);
    quit_ = true;
  }
  wake_.notify_all();
  if (worker_.joinable()) worker_.join();
  if (!in_.is_open() && in_fd_ >= 0) ::close(in_fd_);
  if (!out_ && out_fd_ >= 0 && out_fd_ != in_fd_) ::close(out_fd_);
}

core::Status Connection::Start() {
  boost::system::error_code error;
  in_.assign(in_fd_, error);
  if (!error && out_fd_ != in_fd_) {
    out_.emplace(io_);
    out_->assign(out_fd_, error);
    if (error) out_.reset();
  }
  if (error) {
    return core::Status::IOError("cannot poll the client's descriptors: " + error.message());
  }
  in_fd_ = out_fd_ = -1;  // owned by the descriptors now
  worker_ = std::thread([this] { WorkerLoop(); });
  ReadMore();
  return core::Status::Ok();
}

void Connection::Close() {
  if (closed_) return;
  closed_ = true;
  session_.RequestInterrupt();  // a resume in progress returns promptly
  {
    std::lock_guard<std::mutex> lock(mutex_);
    quit_ = true;
  }
  wake_.notify_all();
  if (worker_.joinable()) worker_.join();
  boost::system::error_code ignored;
  in_.close(ignored);
  if (out_) out_->close(ignored);
  if (log_) log_->Note(id_, "closed");
  if (on_closed_) on_closed_(*this);
}

void Connection::ReadMore() {
  in_.async_read_some(
      asio::buffer(read_buffer_),
      [self = shared_from_this()](const boost::system::error_code& error, std::size_t length) {
        self->OnRead(error, length);
      });
}

void Connection::OnRead(const boost::system::error_code& error, std::size_t length) {
  if (closed_) return;
  if (error) {  // EOF: the client went away; any reply would be lost
    if (log_ && error != asio::error::eof) log_->Note(id_, "read error: " + error.message());
    Close();
    return;
  }
  std::span<const std::uint8_t> bytes(read_buffer_.data(), length);
  if (log_) log_->Received(id_, bytes);
  if (busy_ && pending_.empty() && std::find(bytes.begin(), bytes.end(), 0x03) != bytes.end()) {
    session_.RequestInterrupt();
  }
  pending_.insert(pending_.end(), bytes.begin(), bytes.end());
  HandOver();
  ReadMore();
}

void Connection::HandOver() {
  if (busy_ || pending_.empty() || closed_ || finishing_) return;
  busy_ = true;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    batch_.swap(pending_);
    has_batch_ = true;
  }
  pending_.clear();
  wake_.notify_one();
}

void Connection::WorkerLoop() {
  std::vector<std::uint8_t> batch;
  while (true) {
    {
      std::unique_lock<std::mutex> lock(mutex_);
      wake_.wait(lock, [this] { return has_batch_ || quit_; });
      if (quit_) return;
      batch.swap(batch_);
      has_batch_ = false;
    }
    std::vector<std::string> replies = session_.OnBytes(batch);
    batch.clear();
    // One write per batch: an ack and its reply leave in one segment.
    std::string joined;
    for (const std::string& reply : replies) {
      if (log_) log_->Sent(id_, reply);
      joined += reply;
    }
    asio::post(io_, [self = shared_from_this(), joined = std::move(joined),
                     finished = session_.finished()]() mutable {
      self->OnProcessed(std::move(joined), finished);
    });
  }
}

void Connection::OnProcessed(std::string replies, bool finished) {
  if (closed_) return;
  busy_ = false;
  session_.ClearInterrupt();
  if (!replies.empty()) write_queue_.push_back(std::move(replies));
  finishing_ = finishing_ || finished;
  WriteMore();
  HandOver();
}

void Connection::WriteMore() {
  if (writing_ || closed_) return;
  if (write_queue_.empty()) {
    if (finishing_) Close();
    return;
  }
  writing_ = true;
  asio::async_write(
      out(), asio::buffer(write_queue_.front()),
      [self = shared_from_this()](const boost::system::error_code& error, std::size_t) {
        self->writing_ = false;
        if (self->closed_) return;
        if (error) {
          if (self->log_) self->log_->Note(self->id_, "write error: " + error.message());
          self->Close();
          return;
        }
        self->write_queue_.pop_front();
        self->WriteMore();
      });
}

}  // namespace backstep::gdbstub
