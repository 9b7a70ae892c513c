// Run control and stop replies, forward and reverse, against FakeTarget.
#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "protocol/hex.h"
#include "session/session_test_util.h"
#include "testing/fake_target.h"

namespace backstep::gdbstub {
namespace {

// The stop reply prefix at a position whose PC is `pc`, thread 1.
std::string Stop(std::uint64_t pc, std::string_view thread = "1", std::string_view sig = "05") {
  return "T" + std::string(sig) + "thread:" + std::string(thread) +
         ";06:0700000000000000;07:0800000000000000;10:" + Le(pc, 8) + ";";
}

// The ends of the history: LLDB's exception stop with its description,
// then gdb's replaylog key.
const std::string kHistoryBegin =
    "reason:exception;description:" + HexBytes("beginning of the recorded history") +
    ";replaylog:begin;";
const std::string kHistoryEnd =
    "reason:exception;description:" + HexBytes("end of the recorded history") + ";replaylog:end;";

TEST(ResumeTest, StopQueryBeforeAnyResume) {
  FakeTarget target;
  Wire wire(target);
  EXPECT_EQ(wire.Ask("?"), Stop(0x401000));
  wire.Ask("qSupported:multiprocess+");
  EXPECT_EQ(wire.Ask("?"), Stop(0x401000, "p1.1"));
}

TEST(ResumeTest, StepsForwardAndBackward) {
  FakeTarget target;
  Wire wire(target);
  EXPECT_EQ(wire.Ask("s"), Stop(0x401004));
  EXPECT_EQ(wire.Ask("vCont;s:1"), Stop(0x401008));
  EXPECT_EQ(wire.Ask("bs"), Stop(0x401004));
  EXPECT_EQ(wire.Ask("bs"), Stop(0x401000));
  EXPECT_EQ(wire.Ask("bs"), Stop(0x401000) + kHistoryBegin);  // history start
  EXPECT_EQ(target.position, 0u);
  EXPECT_EQ(wire.Ask("?"), Stop(0x401000) + kHistoryBegin);
}

TEST(ResumeTest, ContinueToTheEndNeverSendsW) {
  FakeTarget target;
  Wire wire(target);
  EXPECT_EQ(wire.Ask("c"), Stop(0x401014) + kHistoryEnd);
  EXPECT_EQ(wire.Ask("s"), Stop(0x401014) + kHistoryEnd);
  EXPECT_EQ(wire.Ask("vCont;c:p1.-1"), Stop(0x401014) + kHistoryEnd);
  EXPECT_EQ(wire.Ask("bc"), Stop(0x401000) + kHistoryBegin);  // still connected, reversible
}

TEST(ResumeTest, BreakpointsForwardAndBackward) {
  FakeTarget target;
  Wire wire(target);
  wire.Ask("Z0,401008,1");
  EXPECT_EQ(wire.Ask("c"), Stop(0x401008));  // swbreak not negotiated: plain T05
  wire.Ask("qSupported:multiprocess+;swbreak+;hwbreak+");
  EXPECT_EQ(wire.Ask("vCont;c:p1.-1"), Stop(0x401008, "p1.1") + "swbreak:;");
  EXPECT_EQ(target.position, 6u);
  // Reverse: the breakpoint at the starting PC is skipped.
  EXPECT_EQ(wire.Ask("bc"), Stop(0x401008, "p1.1") + "swbreak:;");
  EXPECT_EQ(target.position, 2u);
  wire.Ask("z0,401008,1");
  wire.Ask("Z1,40100c,1");
  EXPECT_EQ(wire.Ask("c"), Stop(0x40100c, "p1.1") + "hwbreak:;");
}

TEST(ResumeTest, WatchpointsAreTrapAfterForwardAndStopAtTheWriterBackward) {
  FakeTarget target;
  Wire wire(target);
  EXPECT_EQ(wire.Ask("Z2,404004,4"), "OK");
  EXPECT_EQ(wire.Ask("c"), Stop(0x401010) + "watch:404004;");  // after instruction 3
  EXPECT_EQ(target.position, 4u);
  EXPECT_EQ(wire.Ask("c"), Stop(0x401014) + kHistoryEnd);
  EXPECT_EQ(wire.Ask("bc"), Stop(0x40100c) + "watch:404004;");  // at instruction 3
  EXPECT_EQ(target.position, 3u);
  EXPECT_EQ(wire.Ask("s"), Stop(0x401010) + "watch:404004;");   // stepping over the write
  EXPECT_EQ(wire.Ask("bs"), Stop(0x40100c) + "watch:404004;");  // un-executing it
}

TEST(ResumeTest, ThreadSelectionReachesTheTarget) {
  FakeTarget target;
  Wire wire(target);
  EXPECT_EQ(wire.Ask("Hc2"), "OK");
  wire.Ask("s");
  EXPECT_EQ(target.last_resume_thread, core::ThreadId(2));
  wire.Ask("bs");
  EXPECT_EQ(target.last_resume_thread, core::ThreadId(2));
  wire.Ask("vCont;s:p1.1;c:p1.-1");
  EXPECT_EQ(target.last_resume_thread, core::ThreadId(1));
  wire.Ask("vCont;c:p1.-1");
  EXPECT_EQ(target.last_resume_thread, std::nullopt);
  EXPECT_EQ(wire.Ask("Hcp1.0"), "OK");
  wire.Ask("bs");
  EXPECT_EQ(target.last_resume_thread, std::nullopt);
  EXPECT_EQ(wire.Ask("vCont;s:9"), "E01");
}

TEST(ResumeTest, StopResetsTheGeneralThread) {
  FakeTarget target;
  Wire wire(target);
  wire.Ask("Hg2");
  wire.Ask("s");
  EXPECT_EQ(wire.session.state().general_thread, std::nullopt);
}

TEST(ResumeTest, SignalsAreIgnoredAndAddressesRefused) {
  FakeTarget target;
  Wire wire(target);
  EXPECT_EQ(wire.Ask("C0b"), Stop(0x401014) + kHistoryEnd);
  EXPECT_EQ(wire.Ask("S05"), Stop(0x401014) + kHistoryEnd);
  EXPECT_EQ(wire.Ask("c401000"), "E01");
  EXPECT_EQ(wire.Ask("vCont;S05:1"), Stop(0x401014) + kHistoryEnd);
  EXPECT_EQ(wire.Ask("vCont;r401000,401008:1"), "E16");
  EXPECT_EQ(wire.Ask("vCont?"), "vCont;c;C;s;S");
}

TEST(ResumeTest, ReverseNeedsTheCapability) {
  FakeTarget target;
  target.caps.reverse = false;
  Wire wire(target);
  EXPECT_EQ(wire.Ask("bs"), "");
  EXPECT_EQ(wire.Ask("bc"), "");
  EXPECT_EQ(target.resume_count, 0);
}

TEST(ResumeTest, InterruptInTheSameChunkStopsTheResume) {
  FakeTarget target;
  Wire wire(target);
  wire.Ask("QStartNoAckMode");
  std::vector<std::string> writes = wire.Feed("$c#63\x03");
  ASSERT_EQ(writes.size(), 1u);
  EXPECT_EQ(writes[0], FramePacket(Stop(0x401000, "1", "02")));
  // The interrupt was consumed: the next continue runs to the end.
  EXPECT_EQ(wire.Ask("c"), Stop(0x401014) + kHistoryEnd);
  // A late interrupt while stopped gets no reply of its own; it stays
  // pending and stops the next resume where it is (a pending SIGINT).
  EXPECT_TRUE(wire.Feed("\x03").empty());
  EXPECT_EQ(wire.Ask("bc"), Stop(0x401014, "1", "02"));
  EXPECT_EQ(target.resume_count, 2);
  EXPECT_EQ(wire.Ask("bc"), Stop(0x401000) + kHistoryBegin);
}

// gdb interrupting a software watchpoint: its 0x03 lands between two steps,
// just before the next `bs` in the same chunk. That step must stop with T02
// without moving, or gdb never sees its interrupt.
TEST(ResumeTest, InterruptBeforeAResumePacketStopsItWithoutMoving) {
  FakeTarget target;
  Wire wire(target);
  wire.Ask("QStartNoAckMode");
  EXPECT_EQ(wire.Ask("s"), Stop(0x401004));
  std::vector<std::string> writes = wire.Feed("\x03$bs#d5");
  ASSERT_EQ(writes.size(), 1u);
  EXPECT_EQ(writes[0], FramePacket(Stop(0x401004, "1", "02")));
  EXPECT_EQ(wire.Ask("?"), Stop(0x401004, "1", "02"));
  // Consumed: the next reverse step moves.
  EXPECT_EQ(wire.Ask("bs"), Stop(0x401000));
}

// The 0x03 right after a step in the same chunk: the step completes (steps
// do not poll), so the interrupt is answered by the next resume.
TEST(ResumeTest, InterruptAfterACompletedStepStopsTheNextResume) {
  FakeTarget target;
  Wire wire(target);
  wire.Ask("QStartNoAckMode");
  std::vector<std::string> writes = wire.Feed("$s#73\x03");
  ASSERT_EQ(writes.size(), 1u);
  EXPECT_EQ(writes[0], FramePacket(Stop(0x401004)));
  EXPECT_EQ(wire.Ask("g").empty(), false);  // other packets leave it pending
  EXPECT_EQ(wire.Ask("s"), Stop(0x401004, "1", "02"));
  EXPECT_EQ(wire.Ask("s"), Stop(0x401008));
}

// LLDB sends 0x03 between the steps of a plan, after the stop reply it
// counts as the interrupt's answer: its next resume must run.
TEST(ResumeTest, LldbLateInterruptIsDropped) {
  FakeTarget target;
  Wire wire(target);
  wire.Ask("QStartNoAckMode");
  wire.Ask("QListThreadsInStopReply");
  std::vector<std::string> writes = wire.Feed("$s#73\x03");
  ASSERT_EQ(writes.size(), 1u);
  EXPECT_TRUE(wire.Feed("\x03").empty());
  EXPECT_EQ(wire.Ask("s").substr(0, 3), "T05");
  EXPECT_EQ(target.resume_count, 2);
}

// A target whose continue runs until interrupted.
class EndlessTarget : public FakeTarget {
 public:
  core::Expected<StopReason> Resume(ResumeKind, std::optional<core::ThreadId>,
                                    const std::atomic<bool>* interrupt) override {
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    while (!interrupt->load() && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    position = 4;
    return StopReason(Interrupted{});
  }
};

TEST(ResumeTest, InterruptFromAnotherThreadStopsALongResume) {
  EndlessTarget target;
  Wire wire(target);
  std::thread transport([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    wire.session.RequestInterrupt();
  });
  EXPECT_EQ(wire.Ask("vCont;c:-1"), Stop(0x401010, "1", "02"));
  transport.join();
}

TEST(ResumeTest, ThreadListsInStopReplies) {
  FakeTarget target;
  Wire wire(target);
  wire.Ask("QListThreadsInStopReply");
  EXPECT_EQ(wire.Ask("s"), Stop(0x401004) + "threads:1,2;thread-pcs:401004,401004;");
  wire.Ask("qSupported:multiprocess+");
  EXPECT_EQ(wire.Ask("bs"), Stop(0x401000, "p1.1") + "threads:p1.1,p1.2;thread-pcs:401000,401000;");
}

TEST(ResumeTest, UnknownExpeditedRegistersAreLeftOut) {
  static constexpr int kWithUnknown[] = {6, 15, 16};
  class Target2 : public FakeTarget {
    RegisterLayout register_layout() override {
      return {kRegisterCount, kPcRegnum, kWithUnknown, {}};
    }
  } t2;
  Wire wire(t2);
  EXPECT_EQ(wire.Ask("?"), "T05thread:1;06:0700000000000000;10:0010400000000000;");
}

TEST(ResumeTest, ExitedIsAWReply) {
  FakeTarget target;
  EXPECT_EQ(FormatStopReply(Exited{0}, target, {}), "W00");
  EXPECT_EQ(FormatStopReply(Exited{0x2a}, target, {.multiprocess = true}), "W2a;process:1");
  EXPECT_EQ(FormatStopReply(Watch{WatchKind::kRead, 0x10}, target, {}),
            Stop(0x401000) + "rwatch:10;");
  EXPECT_EQ(FormatStopReply(Watch{WatchKind::kAccess, 0x10}, target, {}),
            Stop(0x401000) + "awatch:10;");
}

TEST(ResumeTest, SignalSyscallAndTerminationReplies) {
  FakeTarget target;
  // gdb numbers SIGUSR1 30 (0x1e) and SIGSEGV 11; LLDB as Linux does.
  EXPECT_EQ(FormatStopReply(Signaled{10}, target, {}).substr(0, 3), "T1e");
  EXPECT_EQ(FormatStopReply(Signaled{10}, target, {.host_signals = true}).substr(0, 3), "T0a");
  EXPECT_EQ(FormatStopReply(SyscallEntry{1}, target, {}), Stop(0x401000) + "syscall_entry:1;");
  EXPECT_EQ(FormatStopReply(SyscallReturn{0xe7}, target, {}),
            Stop(0x401000) + "syscall_return:e7;");
  EXPECT_EQ(FormatStopReply(Terminated{11}, target, {}), "X0b");
  EXPECT_EQ(FormatStopReply(Terminated{10}, target, {.multiprocess = true}), "X1e;process:1");
}

TEST(ResumeTest, ExecStopNamesTheProgramToClientsThatOfferedExecEvents) {
  FakeTarget target;
  // "exec /bin/sh", hex-encoded, as LLDB's exception description.
  const std::string lldb = "reason:exception;description:65786563202f62696e2f7368;";
  EXPECT_EQ(FormatStopReply(Execd{"/bin/sh"}, target, {.exec_events = true}),
            Stop(0x401000) + "exec:2f62696e2f7368;" + lldb);
  EXPECT_EQ(FormatStopReply(Execd{"/bin/sh"}, target, {}), Stop(0x401000) + lldb);
}

}  // namespace
}  // namespace backstep::gdbstub
