// BusyWait's policy (off on one CPU), and a connection's awake wait end to end: a client
// slower than the budget is still served (the wait falls asleep), and a
// stop request ends an awake wait at once instead of after its budget.
#include "transport/busy_wait.h"

#include <gtest/gtest.h>
#include <sched.h>

#include <thread>

#include "backstep/gdbstub/trace_target.h"
#include "trace_target/trace_target_test_util.h"
#include "transport/transport_test_util.h"

namespace backstep::gdbstub {
namespace {

using namespace std::chrono_literals;
using testing::ServerThread;
using testing::TestClient;

TEST(BusyWait, AwakeUntilAWaitRunsOutThenAgainAfterAQuickPacket) {
  BusyWait wait(200us);
  EXPECT_TRUE(wait.awake());
  const auto now = BusyWait::Clock::now();
  EXPECT_EQ(wait.Deadline(now), now + 200us);
  wait.AfterAwake(true);
  EXPECT_TRUE(wait.awake());
  wait.AfterAwake(false);  // the user is reading: sleep from now on
  EXPECT_FALSE(wait.awake());
  wait.AfterSleep(5ms);  // still slow
  EXPECT_FALSE(wait.awake());
  wait.AfterSleep(50us);  // stepping again
  EXPECT_TRUE(wait.awake());
}

TEST(BusyWait, ZeroBudgetAlwaysSleeps) {
  BusyWait wait(0us);
  EXPECT_FALSE(wait.awake());
  wait.AfterSleep(0us);
  EXPECT_FALSE(wait.awake());
}

TEST(BusyWait, OffWhenTheProcessMayUseOneCpuOnly) {
  cpu_set_t saved;
  ASSERT_EQ(::sched_getaffinity(0, sizeof saved, &saved), 0);
  if (CPU_COUNT(&saved) >= 2) {
    EXPECT_EQ(BusyWait::Allowed(200us), 200us);
  }
  cpu_set_t one;
  CPU_ZERO(&one);
  for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu) {
    if (CPU_ISSET(cpu, &saved)) {
      CPU_SET(cpu, &one);
      break;
    }
  }
  ASSERT_EQ(::sched_setaffinity(0, sizeof one, &one), 0);
  EXPECT_EQ(BusyWait::Allowed(200us), 0us);
  ASSERT_EQ(::sched_setaffinity(0, sizeof saved, &saved), 0);
}

std::unique_ptr<ServerThread> StartServer(std::chrono::microseconds busy_wait,
                                          std::uint16_t* port) {
  std::shared_ptr<const core::Trace> trace = testing::SharedReven().trace;
  ServerOptions options;
  options.busy_wait = busy_wait;
  auto server = Server::Create([trace] { return NewTraceTarget(trace); }, options);
  EXPECT_TRUE(server.ok());
  auto bound = (*server)->ListenTcp("127.0.0.1", 0);
  EXPECT_TRUE(bound.ok());
  *port = bound.ok() ? *bound : 0;
  auto thread = std::make_unique<ServerThread>(std::move(*server));
  thread->Start();
  return thread;
}

TEST(BusyWaitConnection, AClientSlowerThanTheBudgetIsServed) {
  std::uint16_t port = 0;
  auto server = StartServer(1ms, &port);
  auto client = TestClient::Connect(port);
  ASSERT_TRUE(client);
  client->NoAck();
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(client->Ask("qC"), "QC1");  // quick: answered from the awake wait
    EXPECT_EQ(client->Ask("qC"), "QC1");
    std::this_thread::sleep_for(30ms);  // slow: the wait ran out and slept
  }
  EXPECT_EQ(client->Ask("bs").rfind("T05", 0), 0u);
}

TEST(BusyWaitConnection, StopEndsAnAwakeWaitAtOnce) {
  std::uint16_t port = 0;
  auto server = StartServer(60s, &port);  // awake for a minute after each reply
  auto client = TestClient::Connect(port);
  ASSERT_TRUE(client);
  client->NoAck();
  EXPECT_EQ(client->Ask("qC"), "QC1");
  EXPECT_EQ(client->Ask("qC"), "QC1");  // the connection thread now waits awake
  server->server().Stop();              // asks, without waiting for the server's thread
  EXPECT_TRUE(client->ClosedByPeer(10s));
}

}  // namespace
}  // namespace backstep::gdbstub
