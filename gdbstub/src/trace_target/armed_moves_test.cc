// The reverse-finish and reverse-next armed moves on a hand-made trace of a
// call: main's line 11 calls f, whose return lands back in line 11.
//
//   pos pc      line  event                         rsp after
//   0   0x1000  10    nop                           0x8000
//   1   0x1004  11    nop
//   2   0x1008  11    call f   [0x7ff8] = 0x100d    0x7ff8
//   3   0x2000  20    push     [0x7ff0] = 0         0x7ff0   (f's entry row)
//   4   0x2001  21    mov      [0x7ff8] = 0x100d            (the same bytes again,
//                                                         as an xsave area would)
//   5   0x2005  21    pop                           0x7ff8
//   6   0x2006  21    ret                           0x8000
//   7   0x100d  11    nop
//   8   0x1010  12    nop
//   9   0x1014        (end)
#include <gtest/gtest.h>

#include <cstring>

#include "backstep/testing/fake_trace.h"
#include "trace_target/trace_target.h"

namespace backstep::gdbstub {
namespace {

namespace ct = core::testing;

core::RegisterWrite Set(core::RegisterId reg, std::uint64_t value) {
  core::RegisterWrite w;
  w.reg = reg;
  std::memcpy(w.value, &value, 8);
  return w;
}

std::vector<std::uint8_t> Le64(std::uint64_t v) {
  std::vector<std::uint8_t> out(8);
  std::memcpy(out.data(), &v, 8);
  return out;
}

class ArmedMoves : public ::testing::Test {
 protected:
  void SetUp() override {
    const core::ArchDescription& arch = core::X86_64();
    ct::FakeTrace fake;
    core::RegisterFile regs(arch);
    regs.SetU64(arch.pc(), 0x1000);
    regs.SetU64(arch.sp(), 0x8000);
    fake.initial_registers.emplace_back(core::ThreadId(1), regs);
    ct::FakeImageRegion stack;
    stack.start = 0x7000;
    stack.bytes.assign(0x1000, 0);
    stack.known.assign(0x1000, 1);
    fake.image.push_back(stack);
    struct Step {
      std::uint64_t next_pc;
      std::optional<std::uint64_t> sp;
      std::optional<std::pair<core::Address, std::uint64_t>> write;
    };
    const Step steps[] = {{0x1004, {}, {}},
                          {0x1008, {}, {}},
                          {0x2000, 0x7ff8, std::pair(core::Address{0x7ff8}, 0x100d)},
                          {0x2001, 0x7ff0, std::pair(core::Address{0x7ff0}, 0)},
                          {0x2005, {}, std::pair(core::Address{0x7ff8}, 0x100d)},
                          {0x2006, 0x7ff8, {}},
                          {0x100d, 0x8000, {}},
                          {0x1010, {}, {}},
                          {0x1014, {}, {}}};
    for (const Step& s : steps) {
      ct::FakeEvent e;
      e.thread = core::ThreadId(1);
      e.registers.push_back(Set(arch.pc(), s.next_pc));
      if (s.sp) e.registers.push_back(Set(arch.sp(), *s.sp));
      if (s.write) e.writes.push_back(ct::FakeAccess{s.write->first, Le64(s.write->second)});
      fake.events.push_back(e);
    }
    auto trace = ct::OpenFakeInMemory(fake);
    ASSERT_TRUE(trace.ok()) << trace.status().ToString();
    auto target = TraceTarget::Create(*trace, {});
    ASSERT_TRUE(target.ok());
    target_ = std::move(*target);
  }
  void GoTo(std::uint64_t p) {
    target_->armed_moves().ArmGoto(core::Position(p));
    ASSERT_TRUE(target_->Resume(ResumeKind::kStep, std::nullopt, nullptr).ok());
  }
  // Runs the armed move from `from`; returns the landing position.
  std::uint64_t Run(std::uint64_t from, const std::string& command,
                    StopReason expected = DoneStep{}) {
    GoTo(from);
    auto armed = target_->monitor_commands()->RunMonitorCommand(command);
    EXPECT_TRUE(armed.ok()) << command << ": " << armed.status().ToString();
    auto stop = target_->Resume(ResumeKind::kStep, std::nullopt, nullptr);
    EXPECT_TRUE(stop.ok());
    if (stop.ok()) {
      // A move that ended where it was meant to says so (MoveDone).
      if (std::holds_alternative<DoneStep>(expected)) expected = MoveDone{target_->position()};
      EXPECT_EQ(*stop, expected) << command;
    }
    return target_->position().value;
  }

  // main [0x1000, 0x1014) rows 10, 11, 12; the caller row unknown.
  const std::string main_plan = "reverse-next 0x1000 0x1014 0 0 0 0x1000:10 0x1004:11 0x1010:12";
  // f [0x2000, 0x2007) rows 20, 21; called from main's line 11.
  const std::string f_plan = "reverse-next 0x2000 0x2007 0x1004 0x1010 11 0x2000:20 0x2001:21";
  std::unique_ptr<TraceTarget> target_;
};

TEST_F(ArmedMoves, ReverseNextStepsOverTheCallToTheLineStart) {
  EXPECT_EQ(Run(8, main_plan), 1u);  // 7 mid-line, 6 = f's ret: skipped to 2, then 1
  EXPECT_EQ(Run(1, main_plan), 0u);
  EXPECT_EQ(Run(0, main_plan, HistoryEdge{HistoryEdge::Side::kBegin}), 0u);
}

TEST_F(ArmedMoves, ReverseNextStopsAtADifferentLineAndLeavesThroughTheEntry) {
  EXPECT_EQ(Run(4, f_plan), 3u);  // the start of line 20
  // From the entry row (it starts at the entry): back into main's row, to its start.
  EXPECT_EQ(Run(3, f_plan), 1u);
}

TEST_F(ArmedMoves, ReverseNextStopsAtABreakpointInTheSkippedCall) {
  ASSERT_TRUE(target_->breakpoints()->InsertBreakpoint(BreakpointType::kSoftware, 0x2001, 1).ok());
  EXPECT_EQ(Run(8, main_plan, SwBreak{}), 4u);
  ASSERT_TRUE(target_->breakpoints()->RemoveBreakpoint(BreakpointType::kSoftware, 0x2001, 1).ok());
}

TEST_F(ArmedMoves, ReverseNextStopsAtAWatchedWrite) {
  ASSERT_TRUE(target_->watchpoints()->InsertWatchpoint(WatchKind::kWrite, 0x7ff0, 8).ok());
  // The push at 3 wrote 0 over 0: unchanged, filtered; every write counts with "all".
  ASSERT_TRUE(target_->monitor_commands()->RunMonitorCommand("watch-filter all").ok());
  EXPECT_EQ(Run(8, main_plan, Watch{WatchKind::kWrite, 0x7ff0}), 3u);
}

TEST_F(ArmedMoves, ReverseFinishGoesToTheCallThatStoredTheReturnAddress) {
  EXPECT_EQ(Run(4, "reverse-finish 0x7ff8"), 2u);
  EXPECT_EQ(Run(6, "reverse-finish 0x7ff8"), 2u);  // not 4, which rewrote the slot
  GoTo(4);
  auto out = target_->monitor_commands()->RunMonitorCommand("reverse-finish 0x7ff8");
  ASSERT_TRUE(out.ok());
  EXPECT_NE(out->find("position 2"), std::string::npos) << *out;
  ASSERT_TRUE(target_->breakpoints()->InsertBreakpoint(BreakpointType::kSoftware, 0x2000, 1).ok());
  EXPECT_EQ(Run(5, "reverse-finish 0x7ff8", SwBreak{}), 3u);
}

TEST_F(ArmedMoves, BadArguments) {
  GoTo(4);
  EXPECT_FALSE(target_->monitor_commands()->RunMonitorCommand("reverse-finish").ok());
  EXPECT_FALSE(target_->monitor_commands()
                   ->RunMonitorCommand("reverse-finish 0x7000")
                   .ok());  // never written
  EXPECT_FALSE(target_->monitor_commands()->RunMonitorCommand("reverse-next 0x1000").ok());
  EXPECT_FALSE(
      target_->monitor_commands()->RunMonitorCommand("reverse-next 0x2000 0x1000 0 0 0").ok());
  EXPECT_FALSE(target_->monitor_commands()
                   ->RunMonitorCommand("reverse-next 0x1000 0x1014 0 0 0 0x1004:11 0x1000:10")
                   .ok());  // unsorted rows
  EXPECT_FALSE(target_->monitor_commands()
                   ->RunMonitorCommand("reverse-next 0x1000 0x1014 0 0 0 0x1004")
                   .ok());
  // Nothing was armed: a step goes forward.
  auto stop = target_->Resume(ResumeKind::kStep, std::nullopt, nullptr);
  ASSERT_TRUE(stop.ok());
  EXPECT_EQ(target_->position().value, 5u);
}

}  // namespace
}  // namespace backstep::gdbstub
