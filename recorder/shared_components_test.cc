// The components the engines share (docs/architecture.md, "The recorder's
// engines and what they share"): their contracts, on their own. The engines
// themselves are tested by recording real programs (recorder_test.cc,
// record_replay_test.cc, emu/emu_crosscheck_test.cc).
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdint>
#include <vector>

#include "recorder/signal_disposition.h"
#include "recorder/thread_scheduler.h"
#include "recorder/tracee.h"
#include "recorder/write_capture.h"

namespace backstep::record {
namespace {

std::vector<std::uint8_t> Bytes(std::initializer_list<std::uint8_t> b) { return b; }

TEST(WriteBuffer, MergesContiguousPiecesOnlyWhenAsked) {
  for (bool merge : {false, true}) {
    WriteBuffer buffer(merge);
    buffer.Add(0x1000, Bytes({1, 2}));
    buffer.Add(0x1002, Bytes({3}));  // contiguous
    buffer.Add(0x2000, Bytes({4}));  // not
    const std::span<const core::MemoryAccess> writes = buffer.Build();
    ASSERT_EQ(writes.size(), merge ? 2u : 3u) << "merge " << merge;
    EXPECT_EQ(writes[0].address, 0x1000u);
    EXPECT_EQ(std::vector<std::uint8_t>(writes[0].data.begin(), writes[0].data.end()),
              merge ? Bytes({1, 2, 3}) : Bytes({1, 2}));
    EXPECT_EQ(writes.back().address, 0x2000u);
    EXPECT_EQ(writes.back().data[0], 4);
    buffer.Clear();
    EXPECT_TRUE(buffer.empty());
    EXPECT_TRUE(buffer.Build().empty());
  }
}

TEST(ThreadScheduler, RoundRobinSkipsThreadsThatCannotRun) {
  ThreadScheduler threads(100);
  for (pid_t tid : {101, 102, 103}) {
    ThreadScheduler::Thread t;
    t.tid = tid;
    threads.Add(std::move(t));
  }
  EXPECT_EQ(threads.TakeStarted(), (std::vector<std::size_t>{1, 2, 3}));
  EXPECT_TRUE(threads.TakeStarted().empty());
  EXPECT_EQ(threads.at(2).index, 2u);
  threads.at(1).parked = true;
  threads.at(3).exited = true;
  user_regs_struct regs{};
  regs.rip = 0x400000;  // thread 0's
  std::vector<core::RegisterWrite> slots(1);
  ASSERT_EQ(threads.NextRunnable(), std::optional<std::size_t>(2));
  threads.at(2).regs.rip = 0x500000;
  EXPECT_EQ(threads.SwitchTo(2, &regs, &slots, /*new_turn=*/true), 102);
  EXPECT_EQ(regs.rip, 0x500000u);
  EXPECT_EQ(threads.at(0).regs.rip, 0x400000u);  // saved
  EXPECT_EQ(threads.NextRunnable(), std::optional<std::size_t>(0));
  threads.at(0).parked = true;
  EXPECT_EQ(threads.NextRunnable(), std::optional<std::size_t>(2));  // itself
  threads.at(2).parked = true;
  EXPECT_EQ(threads.NextRunnable(), std::nullopt);  // all wait in the kernel
  EXPECT_TRUE(threads.TurnOver());
}

TEST(ThreadScheduler, ATurnEndsAfterItsSlice) {
  ThreadScheduler threads(100);
  ThreadScheduler::Thread t;
  t.tid = 101;
  threads.Add(std::move(t));
  for (std::uint64_t i = 0; i + 1 < ThreadScheduler::kTimeSlice; ++i) threads.CountInstruction();
  EXPECT_FALSE(threads.TurnOver());
  threads.CountInstruction();
  EXPECT_TRUE(threads.TurnOver());
  user_regs_struct regs{};
  std::vector<core::RegisterWrite> slots;
  threads.SwitchTo(1, &regs, &slots, /*new_turn=*/true);
  EXPECT_FALSE(threads.TurnOver());
}

TEST(SignalDisposition, ReadsThisProcessesHandlers) {
  const pid_t self = getpid();
  struct sigaction old_usr1 {
  }, old_usr2{}, handler{}, ignore{};
  handler.sa_handler = [](int) {};
  ignore.sa_handler = SIG_IGN;
  ASSERT_EQ(sigaction(SIGUSR1, &handler, &old_usr1), 0);
  ASSERT_EQ(sigaction(SIGUSR2, &ignore, &old_usr2), 0);
  EXPECT_TRUE(HandlesSignal(self, SIGUSR1));
  EXPECT_FALSE(IgnoresSignal(self, SIGUSR1));
  EXPECT_FALSE(DiscardsSignal(self, SIGUSR1));
  EXPECT_TRUE(IgnoresSignal(self, SIGUSR2));
  EXPECT_TRUE(DiscardsSignal(self, SIGUSR2));
  sigaction(SIGUSR1, &old_usr1, nullptr);
  sigaction(SIGUSR2, &old_usr2, nullptr);
  EXPECT_EQ(SignalName(SIGSEGV), "SIGSEGV");
  EXPECT_TRUE(StopsByDefault(SIGTSTP));
  EXPECT_FALSE(StopsByDefault(SIGTERM));
  EXPECT_TRUE(RestartsSyscall(static_cast<std::uint64_t>(-512)));  // -ERESTARTSYS
  EXPECT_FALSE(RestartsSyscall(static_cast<std::uint64_t>(-4)));   // -EINTR
}

// Killing a tracee reaps its threads only: another child of the recorder
// (the native engine's interval workers) keeps its exit status for its own
// waitpid. Before, Kill() waited for any child and took the worker's.
TEST(Tracee, KillLeavesOtherChildrenToTheirWaiters) {
  const pid_t worker = fork();
  ASSERT_GE(worker, 0);
  if (worker == 0) _exit(7);
  siginfo_t info{};  // the worker is a zombie before the tracee is killed
  ASSERT_EQ(waitid(P_PID, worker, &info, WEXITED | WNOWAIT), 0);
  {
    SpawnOptions options;
    options.argv = {"/bin/sleep", "30"};
    core::Expected<Tracee> tracee = Tracee::Spawn(options);
    ASSERT_TRUE(tracee.ok()) << tracee.status().message();
    tracee->Kill();
    EXPECT_FALSE(tracee->alive());
  }
  int status = 0;
  ASSERT_EQ(waitpid(worker, &status, 0), worker) << "the worker's status was taken";
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 7);
}

}  // namespace
}  // namespace backstep::record
