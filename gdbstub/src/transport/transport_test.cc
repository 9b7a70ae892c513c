// The transport end to end through real sockets: a TraceTarget over TCP,
// two clients with their own cursors, interrupting a long resume with 0x03,
// a socketpair (the LLDB plugin's transport) with the packet log, detach and
// shutdown.
#include <sys/socket.h>

#include <atomic>
#include <fstream>
#include <sstream>

#include "backstep/gdbstub/trace_target.h"
#include "testing/fake_target.h"
#include "trace_target/trace_target_test_util.h"
#include "transport/transport_test_util.h"

namespace backstep::gdbstub {
namespace {

using namespace std::chrono_literals;
using testing::ServerThread;
using testing::TestClient;

std::unique_ptr<ServerThread> StartTraceServer(std::uint16_t* port, ServerOptions options = {}) {
  std::shared_ptr<const core::Trace> trace = testing::SharedReven().trace;
  auto server = Server::Create([trace] { return NewTraceTarget(trace); }, std::move(options));
  EXPECT_TRUE(server.ok());
  auto bound = (*server)->ListenTcp("127.0.0.1", 0);
  EXPECT_TRUE(bound.ok()) << bound.status().ToString();
  *port = bound.ok() ? *bound : 0;
  auto thread = std::make_unique<ServerThread>(std::move(*server));
  thread->Start();
  return thread;
}

TEST(Transport, TcpServesATrace) {
  std::uint16_t port = 0;
  auto server = StartTraceServer(&port);
  auto client = TestClient::Connect(port);
  ASSERT_TRUE(client);
  std::string supported = client->Ask("qSupported:multiprocess+;swbreak+;xmlRegisters=i386");
  EXPECT_NE(supported.find("ReverseStep+;ReverseContinue+"), std::string::npos) << supported;
  client->NoAck();
  EXPECT_EQ(client->Ask("?").rfind("T05thread:p1.", 0), 0u);
  std::string g = client->Ask("g");
  EXPECT_EQ(g.size(), 2u * core::X86_64().GdbBlockSize(core::kDefaultX86_64Features));
  const core::Address code = testing::SharedReven().info.code_addresses.front();
  char m[64];
  std::snprintf(m, sizeof m, "m%llx,8", static_cast<unsigned long long>(code));
  EXPECT_EQ(client->Ask(m).size(), 16u);
  EXPECT_NE(client->Ask("bs").find("replaylog:begin;"), std::string::npos);
  EXPECT_EQ(client->Ask("vCont;s:p1.-1").rfind("T05", 0), 0u);
  client->Send("qRcmd," + testing::HexOf("when"));
  EXPECT_EQ(client->Read(),
            "O" + testing::HexOf("position 1 of " + std::to_string(testing::kRevenEvents) +
                                 " (thread 1)\n"));
  EXPECT_EQ(client->Read(), "OK");
  EXPECT_EQ(server->server().connection_count(), 1u);
}

TEST(Transport, ClientsHaveTheirOwnCursor) {
  std::uint16_t port = 0;
  auto server = StartTraceServer(&port);
  auto a = TestClient::Connect(port);
  auto b = TestClient::Connect(port);
  ASSERT_TRUE(a && b);
  a->NoAck();
  b->NoAck();
  for (int i = 0; i < 5; ++i) EXPECT_EQ(a->Ask("s").rfind("T05", 0), 0u);
  EXPECT_EQ(b->Ask("s").rfind("T05", 0), 0u);
  a->Send("qRcmd," + testing::HexOf("when"));
  EXPECT_NE(a->Read()->find(testing::HexOf("position 5 ")), std::string::npos);
  EXPECT_EQ(a->Read(), "OK");
  b->Send("qRcmd," + testing::HexOf("when"));
  EXPECT_NE(b->Read()->find(testing::HexOf("position 1 ")), std::string::npos);
  EXPECT_EQ(b->Read(), "OK");
  EXPECT_EQ(server->server().connection_count(), 2u);
  a.reset();  // closing one leaves the other alone
  EXPECT_EQ(b->Ask("bs").rfind("T05", 0), 0u);
}

// A reverse-continue that runs until interrupted (a stand-in for a scan over
// a huge trace): it polls the flag like core::RunUntil does.
class EndlessTarget : public FakeTarget {
 public:
  core::Expected<StopReason> ResumeBackward(ResumeKind kind, std::optional<core::ThreadId> thread,
                                            const std::atomic<bool>* interrupt) override {
    if (kind == ResumeKind::kStep) return FakeTarget::ResumeBackward(kind, thread, interrupt);
    auto deadline = std::chrono::steady_clock::now() + 20s;
    while (!interrupt->load() && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(1ms);
    }
    return StopReason(Interrupted{});
  }
};

TEST(Transport, InterruptStopsALongReverseContinue) {
  auto server = Server::Create([]() -> core::Expected<std::unique_ptr<Target>> {
    return std::unique_ptr<Target>(new EndlessTarget);
  });
  ASSERT_TRUE(server.ok());
  auto port = (*server)->ListenTcp("127.0.0.1", 0);
  ASSERT_TRUE(port.ok());
  ServerThread thread(std::move(*server));
  thread.Start();
  auto client = TestClient::Connect(*port);
  ASSERT_TRUE(client);
  client->NoAck();
  auto start = std::chrono::steady_clock::now();
  client->Send("bc");
  EXPECT_FALSE(client->Read(300ms));  // still running
  client->SendRaw("\x03");
  auto reply = client->Read(5s);
  ASSERT_TRUE(reply);
  EXPECT_EQ(reply->rfind("T02", 0), 0u) << *reply;
  EXPECT_LT(std::chrono::steady_clock::now() - start, 10s);
  // The interrupt was consumed: the next packets behave normally.
  EXPECT_EQ(client->Ask("bs").rfind("T05", 0), 0u);
  EXPECT_EQ(client->Ask("?").rfind("T05", 0), 0u);
}

TEST(Transport, SocketPairWithPacketLog) {
  std::string log_path = testing::SharedReven().dir + "/packets.log";
  ServerOptions options;
  options.log_path = log_path;
  std::shared_ptr<const core::Trace> trace = testing::SharedReven().trace;
  auto server = Server::Create([trace] { return NewTraceTarget(trace); }, options);
  ASSERT_TRUE(server.ok());
  int fds[2];
  ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM, 0, fds), 0);
  ASSERT_TRUE((*server)->ServeFds(fds[0], fds[0]).ok());
  ServerThread thread(std::move(*server));
  thread.Start();
  {
    TestClient client(fds[1]);
    EXPECT_EQ(client.Ask("QStartNoAckMode"), "OK");
    EXPECT_EQ(client.Ask("qC"), "QC1");
  }
  thread.Join();  // without a listener the server ends with its last client
  std::ifstream in(log_path);
  std::stringstream text;
  text << in.rdbuf();
  EXPECT_NE(text.str().find("#1 <- $QStartNoAckMode#b0"), std::string::npos) << text.str();
  EXPECT_NE(text.str().find("#1 -> $OK#9a"), std::string::npos) << text.str();
  EXPECT_NE(text.str().find("#1 -> $QC1#c5"), std::string::npos) << text.str();
  EXPECT_NE(text.str().find("#1 -- closed"), std::string::npos) << text.str();
}

TEST(Transport, DetachClosesAndStopEndsEverything) {
  std::uint16_t port = 0;
  auto server = StartTraceServer(&port);
  auto a = TestClient::Connect(port);
  auto b = TestClient::Connect(port);
  ASSERT_TRUE(a && b);
  a->NoAck();
  EXPECT_EQ(a->Ask("D"), "OK");
  EXPECT_TRUE(a->ClosedByPeer());
  b->NoAck();
  server->Stop();
  EXPECT_TRUE(b->ClosedByPeer());
}

TEST(Transport, BadListenAddresses) {
  auto server = Server::Create([] {
    return core::Expected<std::unique_ptr<Target>>(std::unique_ptr<Target>(new FakeTarget));
  });
  ASSERT_TRUE(server.ok());
  EXPECT_EQ((*server)->ListenTcp("not-an-ip", 0).status().code(),
            core::StatusCode::kInvalidArgument);
  auto first = (*server)->ListenTcp("127.0.0.1", 0);
  ASSERT_TRUE(first.ok());
  auto again = Server::Create([] {
    return core::Expected<std::unique_ptr<Target>>(std::unique_ptr<Target>(new FakeTarget));
  });
  ASSERT_TRUE(again.ok());
  // NOTE: SO_REUSEADDR does not allow two listeners on one port.
  EXPECT_EQ((*again)->ListenTcp("127.0.0.1", *first).status().code(), core::StatusCode::kIOError);
}

}  // namespace
}  // namespace backstep::gdbstub
