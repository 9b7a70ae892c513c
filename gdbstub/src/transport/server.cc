// Server (backstep/gdbstub/server.h): the TCP listener and the signal set on
// an Asio io_context, and the set of live connections, each served by its
// own thread (connection.h). The io_context thread owns the set: connection
// threads report their end by posting to it.
#include "backstep/gdbstub/server.h"

#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/signal_set.hpp>
#include <csignal>
#include <optional>
#include <set>

#include "backstep/core/mapping_guard.h"
#include "transport/connection.h"
#include "transport/packet_log.h"

namespace backstep::gdbstub {

namespace asio = boost::asio;

namespace {

// True when the client closed the connection before sending a byte (a port
// scanner, a storm of connect/close): serving it would build a cursor for
// nobody, and a backlog of those would make the next real client wait (1,000
// of them cost ~10 s). A client that sent bytes, or half-closed after sending
// them, is served.
bool ClosedBeforeSpeaking(int fd) {
  char byte;
  return ::recv(fd, &byte, 1, MSG_PEEK | MSG_DONTWAIT) == 0;
}

}  // namespace
using asio::ip::tcp;

class Server::Impl {
 public:
  Impl(TargetFactory factory, ServerOptions options, std::unique_ptr<PacketLog> log)
      : factory_(std::move(factory)), options_(std::move(options)), log_(std::move(log)) {}
  ~Impl() { DoStop(); }

  core::Expected<std::uint16_t> ListenTcp(const std::string& address, std::uint16_t port);
  core::Status AddConnection(int in_fd, int out_fd, const std::string& peer);
  void Run();
  void Stop() {
    asio::post(io_, [this] { DoStop(); });
  }
  std::size_t connection_count() const { return count_.load(); }

 private:
  using WorkGuard = asio::executor_work_guard<asio::io_context::executor_type>;
  void Accept();
  void DoStop();
  void OnClosed(std::shared_ptr<Connection> connection);
  void Notice(const std::string& text) {
    if (options_.notice) options_.notice(text);
  }

  asio::io_context io_;
  TargetFactory factory_;
  ServerOptions options_;
  std::unique_ptr<PacketLog> log_;
  std::optional<tcp::acceptor> acceptor_;
  std::optional<asio::signal_set> signals_;
  std::optional<WorkGuard> busy_;  // keeps Run() going while connections live
  std::set<std::shared_ptr<Connection>> connections_;
  std::atomic<std::size_t> count_{0};
  int next_id_ = 1;
  bool stopping_ = false;
  bool told_damage_ = false;
};

core::Expected<std::uint16_t> Server::Impl::ListenTcp(const std::string& address,
                                                      std::uint16_t port) {
  boost::system::error_code error;
  asio::ip::address ip = asio::ip::make_address(address, error);
  if (error) return core::Status::InvalidArgument("not an IP address: '" + address + "'");
  tcp::endpoint endpoint(ip, port);
  tcp::acceptor acceptor(io_);
  if (!acceptor.open(endpoint.protocol(), error) &&
      !acceptor.set_option(tcp::acceptor::reuse_address(true), error) &&
      !acceptor.bind(endpoint, error) &&
      !acceptor.listen(asio::socket_base::max_listen_connections, error)) {
    std::uint16_t bound = acceptor.local_endpoint(error).port();
    if (!error) {
      acceptor_.emplace(std::move(acceptor));
      Accept();
      return bound;
    }
  }
  return core::Status::IOError("cannot listen on " + address + ":" + std::to_string(port) + ": " +
                               error.message());
}

void Server::Impl::Accept() {
  acceptor_->async_accept([this](const boost::system::error_code& error, tcp::socket socket) {
    if (stopping_ || !acceptor_ || !acceptor_->is_open()) return;
    if (error) {
      Notice("accept failed: " + error.message());
    } else {
      boost::system::error_code ignored;
      socket.set_option(tcp::no_delay(true), ignored);  // replies are small and latency-bound
      tcp::endpoint remote = socket.remote_endpoint(ignored);
      std::string peer = remote.address().to_string() + ":" + std::to_string(remote.port());
      // The connection thread does blocking I/O: give it a blocking socket.
      socket.native_non_blocking(false, ignored);
      socket.non_blocking(false, ignored);
      boost::system::error_code released;
      int fd = socket.release(released);
      if (released) {
        Notice("cannot take the client's socket: " + released.message());
      } else if (ClosedBeforeSpeaking(fd)) {
        ::close(fd);
      } else if (core::Status status = AddConnection(fd, fd, peer); !status.ok()) {
        Notice(status.ToString());
      }
    }
    Accept();
  });
}

core::Status Server::Impl::AddConnection(int in_fd, int out_fd, const std::string& peer) {
  auto refuse = [&](const core::Status& why) {
    ::close(in_fd);
    if (out_fd != in_fd) ::close(out_fd);
    return why;
  };
  if (const std::string damaged = core::MappedFilesDamaged(); !damaged.empty()) {
    return refuse(core::Status::Corruption("refused the client from " + peer + ": " + damaged +
                                           " changed while served; restart serve"));
  }
  if (connections_.size() >= options_.max_connections) {
    return refuse(core::Status::Unsupported(
        "refused the client from " + peer + ": " + std::to_string(connections_.size()) +
        " connections already (the limit; serve --max-connections N)"));
  }
  auto target = factory_();
  if (!target.ok()) return refuse(target.status());
  const int id = next_id_++;
  auto connection = std::make_shared<Connection>(in_fd, out_fd, std::move(*target), id, log_.get(),
                                                 options_.busy_wait, [this](Connection& closed) {
                                                   // On the connection's thread: the I/O thread
                                                   // joins and forgets it.
                                                   asio::post(io_, [this, raw = &closed] {
                                                     for (const auto& c : connections_) {
                                                       if (c.get() == raw) return OnClosed(c);
                                                     }
                                                   });
                                                 });
  // Counted before it starts: its client may be served before this thread
  // runs again.
  connections_.insert(connection);
  count_.store(connections_.size());
  if (core::Status status = connection->Start(); !status.ok()) {
    connections_.erase(connection);  // its destructor closes the client's socket
    count_.store(connections_.size());
    return status.Annotate("refused the client from " + peer);
  }
  if (!busy_) busy_.emplace(io_.get_executor());
  if (log_) log_->Note(id, "connected from " + peer);
  Notice("client " + std::to_string(id) + " connected from " + peer);
  return core::Status::Ok();
}

void Server::Impl::OnClosed(std::shared_ptr<Connection> connection) {
  connection->Join();
  connections_.erase(connection);
  count_.store(connections_.size());
  if (!stopping_) Notice("client " + std::to_string(connection->id()) + " disconnected");
  if (const std::string damaged = core::MappedFilesDamaged(); !damaged.empty() && !told_damage_) {
    told_damage_ = true;
    Notice(damaged + " shrank while served (truncated or rewritten): its sessions end");
  }
  // Without a listener the server lives as long as its connections.
  if (connections_.empty()) {
    busy_.reset();
    if (!acceptor_ && signals_) {
      boost::system::error_code ignored;
      signals_->cancel(ignored);
    }
  }
}

void Server::Impl::Run() {
  if (options_.stop_on_signals && !signals_) {
    signals_.emplace(io_, SIGINT, SIGTERM);
    signals_->async_wait([this](const boost::system::error_code& error, int signal) {
      if (error) return;
      Notice(std::string("stopping (") + (signal == SIGINT ? "SIGINT" : "SIGTERM") + ")");
      DoStop();
    });
    if (!acceptor_ && connections_.empty()) signals_->cancel();
  }
  io_.run();
  io_.restart();
}

// Idempotent; on the I/O thread (or once Run() has returned).
void Server::Impl::DoStop() {
  stopping_ = true;
  boost::system::error_code ignored;
  if (acceptor_) acceptor_->close(ignored);
  if (signals_) signals_->cancel(ignored);
  for (const auto& connection : connections_) connection->RequestStop();
  for (const auto& connection : connections_) connection->Join();
  connections_.clear();
  count_.store(0);
  busy_.reset();
  io_.stop();
}

// ---- Server

core::Expected<std::unique_ptr<Server>> Server::Create(TargetFactory factory,
                                                       ServerOptions options) {
  std::signal(SIGPIPE, SIG_IGN);
  std::unique_ptr<PacketLog> log;
  if (!options.log_path.empty()) {
    BACKSTEP_ASSIGN_OR_RETURN(log, PacketLog::Open(options.log_path));
  }
  return std::unique_ptr<Server>(
      new Server(std::make_unique<Impl>(std::move(factory), std::move(options), std::move(log))));
}

Server::Server(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Server::~Server() = default;  // Impl stops what is left

core::Expected<std::uint16_t> Server::ListenTcp(const std::string& address, std::uint16_t port) {
  return impl_->ListenTcp(address, port);
}

core::Status Server::ServeFds(int in_fd, int out_fd) {
  return impl_->AddConnection(in_fd, out_fd,
                              in_fd == out_fd ? "fd " + std::to_string(in_fd) : "stdio");
}

void Server::Run() { impl_->Run(); }
void Server::Stop() { impl_->Stop(); }
std::size_t Server::connection_count() const { return impl_->connection_count(); }

}  // namespace backstep::gdbstub
