// TraceTarget over the two-thread i386 usercorn trace of
// core/testing/include/backstep/testing/i386_threads_trace.h: everything the stub serves comes
// from the i386 table (layout, target.xml, expedited registers, host info),
// every thread of the trace is listed at every position, and a thread's
// registers are its own (unknown before its first event).
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>

#include "backstep/core/arch.h"
#include "backstep/testing/i386_threads_trace.h"
#include "trace_target/trace_target.h"

namespace backstep::gdbstub {
namespace {

using core::Position;
using core::ThreadId;

class TraceTargetI386 : public ::testing::Test {
 protected:
  void SetUp() override {
    char name[] = "/tmp/backstep-i386-XXXXXX";
    dir_ = mkdtemp(name);
    auto facts = core::testing::WriteI386ThreadsTrace(dir_ + "/t.ucir");
    ASSERT_TRUE(facts.ok()) << facts.status().ToString();
    facts_ = *facts;
    auto trace = core::Trace::Open(dir_ + "/t.ucir");
    ASSERT_TRUE(trace.ok()) << trace.status().ToString();
    trace_ = *trace;
    auto target = TraceTarget::Create(trace_, {});
    ASSERT_TRUE(target.ok());
    target_ = std::move(*target);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::uint64_t Reg(ThreadId thread, std::string_view name, bool* known) {
    const int regnum = core::I386().info(*core::I386().Find(name)).gdb_regnum;
    auto value = target_->ReadRegister(thread, regnum);
    EXPECT_TRUE(value.ok());
    *known = value->all_known();
    std::uint64_t v = 0;
    for (int i = 0; i < value->size && i < 8; ++i) v |= std::uint64_t{value->bytes[i]} << (8 * i);
    return v;
  }

  std::string dir_;
  core::testing::I386ThreadsFacts facts_;
  std::shared_ptr<core::Trace> trace_;
  std::unique_ptr<TraceTarget> target_;
};

TEST_F(TraceTargetI386, LayoutDocumentsAndHostInfoComeFromTheI386Table) {
  EXPECT_EQ(&trace_->arch(), &core::I386());
  EXPECT_EQ(trace_->event_count(), facts_.events);
  const RegisterLayout layout = target_->register_layout();
  EXPECT_EQ(layout.count, 50);  // core, sse, linux, avx
  EXPECT_EQ(layout.pc, 8);
  EXPECT_EQ(std::vector<int>(layout.expedited.begin(), layout.expedited.end()),
            (std::vector<int>{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}));  // eax..edi, eip, eflags
  EXPECT_EQ(std::vector<int>(layout.frame.begin(), layout.frame.end()),
            (std::vector<int>{4, 5, 8}));  // esp, ebp, eip
  auto target_xml = target_->TargetDescription("target.xml");
  ASSERT_TRUE(target_xml.has_value());
  EXPECT_NE(target_xml->find("<architecture>i386</architecture>"), std::string::npos);
  EXPECT_TRUE(target_->TargetDescription("32bit-core.xml").has_value());
  EXPECT_TRUE(target_->TargetDescription("32bit-avx.xml").has_value());
  EXPECT_FALSE(target_->TargetDescription("64bit-core.xml").has_value());
  const HostInfo* host = target_->host_info();
  ASSERT_NE(host, nullptr);
  EXPECT_EQ(host->triple, "i386-pc-linux-gnu");
  EXPECT_EQ(host->pointer_size, 4u);
}

TEST_F(TraceTargetI386, EveryThreadIsListedWithItsOwnPartialRegisters) {
  std::vector<ThreadInfo> threads = target_->Threads();
  ASSERT_EQ(threads.size(), 2u);
  EXPECT_EQ(threads[0].id, ThreadId(1));
  EXPECT_EQ(threads[1].id, ThreadId(2));
  bool known = false;
  // Position 0: thread 2 has not run yet: all of its registers are unknown.
  EXPECT_EQ(Reg(ThreadId(1), "eip", &known), facts_.code);
  EXPECT_TRUE(known);
  EXPECT_EQ(Reg(ThreadId(1), "ebx", &known), 0x1111u);
  EXPECT_TRUE(known);
  Reg(ThreadId(1), "eflags", &known);
  EXPECT_FALSE(known);  // never recorded
  Reg(ThreadId(2), "eip", &known);
  EXPECT_FALSE(known);
  // The end: thread 2's state after its own last event.
  target_->armed_moves().ArmGoto(Position(trace_->event_count()));
  ASSERT_TRUE(target_->Resume(ResumeKind::kStep, std::nullopt, nullptr).ok());
  EXPECT_EQ(Reg(ThreadId(2), "esp", &known), facts_.thread2_esp);
  EXPECT_TRUE(known);
  Reg(ThreadId(2), "ebx", &known);
  EXPECT_FALSE(known);
  EXPECT_EQ(Reg(ThreadId(2), "eip", &known), facts_.code + 0x119);
  EXPECT_TRUE(known);
}

TEST_F(TraceTargetI386, WatchpointStopsInTheWritingThreadBothWays) {
  ASSERT_TRUE(target_->watchpoints()->InsertWatchpoint(WatchKind::kWrite, facts_.flag, 4).ok());
  auto stop = target_->Resume(ResumeKind::kContinue, std::nullopt, nullptr);
  ASSERT_TRUE(stop.ok());
  ASSERT_TRUE(std::holds_alternative<Watch>(*stop));
  EXPECT_EQ(target_->position(), Position(facts_.flag_write_event + 1));
  EXPECT_EQ(target_->current_thread(), ThreadId(2));
  target_->armed_moves().ArmGoto(Position(trace_->event_count()));
  ASSERT_TRUE(target_->Resume(ResumeKind::kStep, std::nullopt, nullptr).ok());
  stop = target_->ResumeBackward(ResumeKind::kContinue, std::nullopt, nullptr);
  ASSERT_TRUE(stop.ok());
  ASSERT_TRUE(std::holds_alternative<Watch>(*stop));
  EXPECT_EQ(target_->position(), Position(facts_.flag_write_event));
  EXPECT_EQ(target_->current_thread(), ThreadId(2));
}

TEST_F(TraceTargetI386, PartialMemoryIsTheKnownPrefix) {
  std::uint8_t buf[8];
  EXPECT_EQ(target_->ReadMemory(facts_.data + 0xfc, buf), 4u);  // data is 0x100 bytes
  EXPECT_EQ(target_->ReadMemory(facts_.data + 0x100, buf), 0u);
  EXPECT_EQ(target_->ReadMemory(facts_.counter, buf), 8u);
  EXPECT_EQ(buf[0], facts_.counter_initial);
}

TEST_F(TraceTargetI386, ReadWatchpointsAreRefusedWithoutRecordedReads) {
  EXPECT_FALSE(trace_->header().records_reads);  // usercorn MEM_READ holds no value
  EXPECT_FALSE(target_->watchpoints()->Supports(WatchKind::kRead));
  EXPECT_FALSE(target_->watchpoints()->Supports(WatchKind::kAccess));
  EXPECT_TRUE(target_->watchpoints()->Supports(WatchKind::kWrite));
  auto info = target_->monitor_commands()->RunMonitorCommand("info");
  ASSERT_TRUE(info.ok());
  EXPECT_NE(info->find("not recorded (rwatch/awatch are refused)"), std::string::npos) << *info;
  EXPECT_NE(info->find("thread 1: events 0.." + std::to_string(facts_.events - 1)),
            std::string::npos)
      << *info;
  EXPECT_NE(info->find("thread 2: events "), std::string::npos) << *info;
}

}  // namespace
}  // namespace backstep::gdbstub
