// TraceTarget over a generated REVEN trace: registers and memory against a
// plain cursor, steps and continues both ways (docs/protocol.md §6), breakpoints,
// watchpoints, interrupts, armed moves and trace frames.
#include "trace_target/trace_target.h"

#include <gtest/gtest.h>

#include <cctype>

#include "backstep/core/cursor.h"
#include "session/session_test_util.h"
#include "trace_target/trace_target_test_util.h"

namespace backstep::gdbstub {
namespace {

using core::Position;

class TraceTargetReven : public ::testing::Test {
 protected:
  void SetUp() override {
    fx_ = &testing::SharedReven();
    ASSERT_TRUE(fx_->trace);
    auto target = TraceTarget::Create(fx_->trace, {});
    ASSERT_TRUE(target.ok()) << target.status().ToString();
    target_ = std::move(*target);
    auto cursor = fx_->trace->NewCursor();
    ASSERT_TRUE(cursor.ok());
    cursor_ = std::move(*cursor);
    end_ = fx_->trace->event_count();
  }

  StopReason Forward(ResumeKind kind, const std::atomic<bool>* interrupt = nullptr) {
    auto stop = target_->Resume(kind, std::nullopt, interrupt);
    EXPECT_TRUE(stop.ok()) << stop.status().ToString();
    return stop.ok() ? *stop : StopReason(Exited{});
  }
  StopReason Backward(ResumeKind kind) {
    auto stop = target_->ResumeBackward(kind, std::nullopt, nullptr);
    EXPECT_TRUE(stop.ok()) << stop.status().ToString();
    return stop.ok() ? *stop : StopReason(Exited{});
  }
  void GoTo(std::uint64_t p) {
    target_->armed_moves().ArmGoto(Position(p));
    EXPECT_EQ(Forward(ResumeKind::kStep), StopReason(MoveDone{Position(p)}));
    ASSERT_EQ(target_->position(), Position(p));
  }
  std::uint64_t Pc() {
    auto value = target_->ReadRegister(target_->current_thread(), 16);
    EXPECT_TRUE(value.ok() && value->all_known());
    std::uint64_t pc = 0;
    for (int i = 7; i >= 0; --i) pc = pc << 8 | value->bytes[i];
    return pc;
  }
  std::uint64_t CursorPc(std::uint64_t p) {
    EXPECT_TRUE(cursor_->Seek(Position(p)).ok());
    return cursor_->Pc(cursor_->current_thread()).value_or(0);
  }

  const testing::RevenFixture* fx_ = nullptr;
  std::unique_ptr<TraceTarget> target_;
  std::unique_ptr<core::Cursor> cursor_;
  std::uint64_t end_ = 0;
};

TEST_F(TraceTargetReven, LayoutAndDescription) {
  RegisterLayout layout = target_->register_layout();
  EXPECT_EQ(layout.count,
            static_cast<int>(core::X86_64().GdbLayout(core::kDefaultX86_64Features).size()));
  EXPECT_EQ(layout.pc, 16);
  // rax..r15, rip, eflags: all gdb and LLDB need to compute the frame.
  std::vector<int> general(18);
  for (int i = 0; i < 18; ++i) general[i] = i;
  EXPECT_EQ(std::vector<int>(layout.expedited.begin(), layout.expedited.end()), general);
  EXPECT_EQ(std::vector<int>(layout.frame.begin(), layout.frame.end()),
            (std::vector<int>{6, 7, 16}));  // rbp, rsp, rip
  auto xml = target_->TargetDescription("target.xml");
  ASSERT_TRUE(xml);
  EXPECT_NE(xml->find("i386:x86-64"), std::string_view::npos);
  EXPECT_FALSE(target_->TargetDescription("nope.xml"));
  EXPECT_TRUE(target_->auxv().empty());
}

// The `regnum:value` pairs of a stop reply, in order.
std::vector<std::pair<int, std::string>> ExpeditedRegisters(const std::string& reply) {
  std::vector<std::pair<int, std::string>> out;
  for (std::size_t start = 3; start < reply.size();) {  // after `T05`
    std::size_t end = reply.find(';', start);
    if (end == std::string::npos) end = reply.size();
    const std::string field = reply.substr(start, end - start);
    const std::size_t colon = field.find(':');
    if (colon == 2 && std::isxdigit(field[0]) && std::isxdigit(field[1])) {
      out.emplace_back(std::stoi(field.substr(0, 2), nullptr, 16), field.substr(3));
    }
    start = end + 1;
  }
  return out;
}

// gdb computes the frame from rbp, rsp and rip and parses every register of
// every stop reply: it gets those three (the others with `g`); LLDB, which
// reads every general register at each stop, gets all of them.
TEST_F(TraceTargetReven, StopRepliesExpediteTheFrameForGdbAndEveryGeneralRegisterForLldb) {
  GoTo(end_ / 2);
  auto value_of = [&](int regnum) {
    auto value = target_->ReadRegister(target_->current_thread(), regnum);
    EXPECT_TRUE(value.ok() && value->all_known());
    std::string hex;
    for (std::size_t i = 0; value.ok() && i < value->size; ++i) hex += Le(value->bytes[i], 1);
    return hex;
  };
  Wire gdb(*target_);
  gdb.Ask("qSupported:multiprocess+;swbreak+;hwbreak+");
  std::vector<std::pair<int, std::string>> frame;
  for (int regnum : {6, 7, 16}) frame.emplace_back(regnum, value_of(regnum));
  EXPECT_EQ(ExpeditedRegisters(gdb.Ask("?")), frame);

  Wire lldb(*target_);
  EXPECT_EQ(lldb.Ask("QThreadSuffixSupported"), "OK");
  EXPECT_EQ(lldb.Ask("QListThreadsInStopReply"), "OK");
  std::vector<std::pair<int, std::string>> general;
  for (int regnum = 0; regnum < 18; ++regnum) general.emplace_back(regnum, value_of(regnum));
  EXPECT_EQ(ExpeditedRegisters(lldb.Ask("?")), general);
}

TEST_F(TraceTargetReven, RegistersMatchTheCursorEverywhere) {
  const auto slots = core::X86_64().GdbLayout(core::kDefaultX86_64Features);
  for (std::uint64_t p : {std::uint64_t{0}, std::uint64_t{1}, std::uint64_t{777}, end_ / 2, end_}) {
    GoTo(p);
    ASSERT_TRUE(cursor_->Seek(Position(p)).ok());
    core::ThreadId thread = target_->current_thread();
    auto file = cursor_->Registers(thread);
    ASSERT_TRUE(file.ok());
    for (const core::GdbSlot& slot : slots) {
      auto value = target_->ReadRegister(thread, slot.regnum);
      ASSERT_TRUE(value.ok());
      ASSERT_EQ(value->size, slot.size);
      std::vector<std::uint8_t> expected(slot.size);
      bool known = (*file)->Read(slot.reg, expected);
      EXPECT_EQ(value->all_known(), known) << "regnum " << slot.regnum << " at " << p;
      if (known) {
        EXPECT_TRUE(std::equal(expected.begin(), expected.end(), value->bytes.begin()))
            << "regnum " << slot.regnum << " at " << p;
      }
    }
  }
  EXPECT_FALSE(target_->ReadRegister(target_->current_thread(), 1000).ok());
  EXPECT_FALSE(target_->ReadRegister(core::ThreadId(987654), 0).ok());
}

TEST_F(TraceTargetReven, MemoryIsTheKnownPrefix) {
  GoTo(end_ / 3);
  ASSERT_TRUE(cursor_->Seek(Position(end_ / 3)).ok());
  const core::Address code = fx_->info.code_addresses.front();
  std::vector<std::uint8_t> got(64), want(64), known(64);
  ASSERT_EQ(target_->ReadMemory(code, got), 64u);
  ASSERT_TRUE(cursor_->ReadMemory(code, want, known).ok());
  EXPECT_EQ(got, want);
  // The last mapped page before a hole: a read across it stops at the hole.
  const auto& pages = fx_->info.pages;
  for (std::size_t i = 0; i + 1 < pages.size(); ++i) {
    if (pages[i + 1].virtual_address == pages[i].virtual_address + 4096) continue;
    std::vector<std::uint8_t> across(16);
    EXPECT_EQ(target_->ReadMemory(pages[i].virtual_address + 4096 - 8, across), 8u);
    EXPECT_EQ(target_->ReadMemory(pages[i].virtual_address + 4096, across), 0u);
    break;
  }
}

TEST_F(TraceTargetReven, StepsAndHistoryEdges) {
  EXPECT_EQ(Backward(ResumeKind::kStep), StopReason(HistoryEdge{HistoryEdge::Side::kBegin}));
  EXPECT_EQ(target_->position(), Position(0));
  EXPECT_EQ(Forward(ResumeKind::kStep), StopReason(DoneStep{}));
  EXPECT_EQ(target_->position(), Position(1));
  EXPECT_EQ(Pc(), CursorPc(1));
  EXPECT_EQ(Backward(ResumeKind::kStep), StopReason(DoneStep{}));
  EXPECT_EQ(target_->position(), Position(0));
  EXPECT_EQ(Backward(ResumeKind::kContinue), StopReason(HistoryEdge{HistoryEdge::Side::kBegin}));
  GoTo(end_ - 1);
  EXPECT_EQ(Forward(ResumeKind::kStep), StopReason(DoneStep{}));
  EXPECT_EQ(Forward(ResumeKind::kStep), StopReason(HistoryEdge{HistoryEdge::Side::kEnd}));
  EXPECT_EQ(Forward(ResumeKind::kContinue), StopReason(HistoryEdge{HistoryEdge::Side::kEnd}));
  EXPECT_EQ(target_->position(), Position(end_));
}

TEST_F(TraceTargetReven, BreakpointsBothWays) {
  ASSERT_NE(fx_->info.far_pc_event, 0u);
  const core::Address far = fx_->info.far_pc;
  ASSERT_TRUE(target_->breakpoints()->InsertBreakpoint(BreakpointType::kSoftware, far, 1).ok());
  EXPECT_EQ(Forward(ResumeKind::kContinue), StopReason(SwBreak{}));
  EXPECT_EQ(target_->position(), Position(fx_->info.far_pc_event));
  EXPECT_EQ(Pc(), far);
  EXPECT_EQ(Forward(ResumeKind::kContinue), StopReason(HistoryEdge{HistoryEdge::Side::kEnd}));
  EXPECT_EQ(Backward(ResumeKind::kContinue), StopReason(SwBreak{}));
  EXPECT_EQ(target_->position(), Position(fx_->info.far_pc_event));
  // A breakpoint at the starting pc does not fire again.
  EXPECT_EQ(Backward(ResumeKind::kContinue), StopReason(HistoryEdge{HistoryEdge::Side::kBegin}));
  ASSERT_TRUE(target_->breakpoints()->RemoveBreakpoint(BreakpointType::kSoftware, far, 1).ok());
  ASSERT_TRUE(target_->breakpoints()->InsertBreakpoint(BreakpointType::kHardware, far, 1).ok());
  EXPECT_EQ(Forward(ResumeKind::kContinue), StopReason(HwBreak{}));
  ASSERT_TRUE(target_->breakpoints()->RemoveBreakpoint(BreakpointType::kHardware, far, 1).ok());
  EXPECT_TRUE(target_->breakpoints()
                  ->RemoveBreakpoint(BreakpointType::kHardware, far, 1)
                  .ok());  // idempotent
  EXPECT_EQ(Forward(ResumeKind::kContinue), StopReason(HistoryEdge{HistoryEdge::Side::kEnd}));
}

TEST_F(TraceTargetReven, WatchpointsStopAroundTheWrite) {
  const auto& info = fx_->info;
  ASSERT_NE(info.once_event, 0u);
  EXPECT_TRUE(target_->watchpoints()->Supports(WatchKind::kWrite));
  EXPECT_FALSE(target_->watchpoints()->Supports(WatchKind::kRead));  // REVEN records no reads
  EXPECT_FALSE(target_->watchpoints()->Supports(WatchKind::kAccess));
  ASSERT_TRUE(target_->watchpoints()
                  ->InsertWatchpoint(WatchKind::kWrite, info.once_address, info.once_size)
                  .ok());
  StopReason stop = Forward(ResumeKind::kContinue);
  ASSERT_TRUE(std::holds_alternative<Watch>(stop));
  const Watch& watch = std::get<Watch>(stop);
  EXPECT_EQ(watch.kind, WatchKind::kWrite);
  EXPECT_GE(watch.addr, info.once_address);
  EXPECT_LT(watch.addr, info.once_address + info.once_size);
  EXPECT_EQ(target_->position(), Position(info.once_event + 1));  // trap after the write
  GoTo(end_);
  EXPECT_TRUE(std::holds_alternative<Watch>(Backward(ResumeKind::kContinue)));
  EXPECT_EQ(target_->position(), Position(info.once_event));  // before the write
  // Steps over the write report it too, both ways.
  EXPECT_TRUE(std::holds_alternative<Watch>(Forward(ResumeKind::kStep)));
  EXPECT_EQ(target_->position(), Position(info.once_event + 1));
  EXPECT_TRUE(std::holds_alternative<Watch>(Backward(ResumeKind::kStep)));
  EXPECT_EQ(target_->position(), Position(info.once_event));
  EXPECT_EQ(Backward(ResumeKind::kStep), StopReason(DoneStep{}));
  ASSERT_TRUE(target_->watchpoints()
                  ->RemoveWatchpoint(WatchKind::kWrite, info.once_address, info.once_size)
                  .ok());
  EXPECT_EQ(Backward(ResumeKind::kContinue), StopReason(HistoryEdge{HistoryEdge::Side::kBegin}));
}

TEST_F(TraceTargetReven, InterruptStopsAContinue) {
  std::atomic<bool> interrupt{true};
  ASSERT_TRUE(target_->breakpoints()
                  ->InsertBreakpoint(BreakpointType::kSoftware, fx_->info.far_pc, 1)
                  .ok());
  EXPECT_EQ(Forward(ResumeKind::kContinue, &interrupt), StopReason(Interrupted{}));
  EXPECT_EQ(target_->position(), Position(0));
}

TEST_F(TraceTargetReven, ArmedMovesRunOnTheNextResume) {
  ASSERT_TRUE(target_->monitor_commands()->RunMonitorCommand("goto 100").ok());
  EXPECT_EQ(target_->position(), Position(0));  // armed, not moved
  EXPECT_EQ(Forward(ResumeKind::kStep), StopReason(MoveDone{Position(100)}));
  EXPECT_EQ(target_->position(), Position(100));
  ASSERT_TRUE(target_->monitor_commands()->RunMonitorCommand("reverse-stepi").ok());
  EXPECT_EQ(Forward(ResumeKind::kStep), StopReason(MoveDone{Position(99)}));
  EXPECT_EQ(target_->position(), Position(99));
  ASSERT_TRUE(target_->monitor_commands()->RunMonitorCommand("direction reverse").ok());
  EXPECT_EQ(Forward(ResumeKind::kStep), StopReason(DoneStep{}));
  EXPECT_EQ(target_->position(), Position(98));
  EXPECT_EQ(Forward(ResumeKind::kContinue), StopReason(HistoryEdge{HistoryEdge::Side::kBegin}));
  ASSERT_TRUE(target_->monitor_commands()->RunMonitorCommand("direction forward").ok());
  ASSERT_TRUE(target_->monitor_commands()->RunMonitorCommand("goto 50%").ok());
  EXPECT_EQ(Backward(ResumeKind::kContinue), StopReason(MoveDone{Position(end_ / 2)}));  // bc too
  EXPECT_EQ(target_->position(), Position(end_ / 2));
  ASSERT_TRUE(target_->monitor_commands()->RunMonitorCommand("goto end").ok());
  EXPECT_EQ(Forward(ResumeKind::kContinue), StopReason(MoveDone{Position(end_)}));
  EXPECT_EQ(target_->position(), Position(end_));
}

TEST_F(TraceTargetReven, FramesArePositions) {
  EXPECT_EQ(target_->trace_frames()->frame_count(), end_ + 1);  // the final state too
  auto hit = target_->trace_frames()->FindFrame(FrameByNumber{3}, std::nullopt);
  ASSERT_TRUE(hit);
  EXPECT_EQ(hit->frame, 3u);
  EXPECT_EQ(hit->tracepoint, 1u);
  hit = target_->trace_frames()->FindFrame(FrameByNumber{static_cast<std::uint32_t>(end_)},
                                           std::nullopt);
  ASSERT_TRUE(hit);
  EXPECT_EQ(hit->frame, end_);
  EXPECT_FALSE(target_->trace_frames()->FindFrame(
      FrameByNumber{static_cast<std::uint32_t>(end_ + 1)}, std::nullopt));
  const std::uint64_t pc0 = Pc();
  ASSERT_TRUE(target_->trace_frames()->SelectFrame(3).ok());
  EXPECT_EQ(Pc(), CursorPc(3));  // reads answer at the frame
  EXPECT_EQ(target_->position(), Position(0));
  ASSERT_TRUE(target_->trace_frames()->SelectFrame(static_cast<std::uint32_t>(end_)).ok());
  EXPECT_EQ(Pc(), CursorPc(end_));
  ASSERT_TRUE(target_->trace_frames()->SelectFrame(std::nullopt).ok());
  EXPECT_EQ(Pc(), pc0);

  const auto& info = fx_->info;
  hit = target_->trace_frames()->FindFrame(FrameByPc{info.far_pc}, std::nullopt);
  ASSERT_TRUE(hit);
  EXPECT_EQ(hit->frame, info.far_pc_event);
  EXPECT_FALSE(target_->trace_frames()->FindFrame(FrameByPc{info.far_pc},
                                                  static_cast<std::uint32_t>(info.far_pc_event)));
  hit = target_->trace_frames()->FindFrame(FrameInRange{info.far_pc, info.far_pc}, 5);
  ASSERT_TRUE(hit);
  EXPECT_EQ(hit->frame, info.far_pc_event);
  hit = target_->trace_frames()->FindFrame(FrameByPc{CursorPc(10)}, 9);
  ASSERT_TRUE(hit);
  EXPECT_EQ(hit->frame, 10u);
  hit = target_->trace_frames()->FindFrame(FrameByTracepoint{1}, 41);
  ASSERT_TRUE(hit);
  EXPECT_EQ(hit->frame, 42u);
  EXPECT_FALSE(target_->trace_frames()->FindFrame(FrameByTracepoint{2}, std::nullopt));
  EXPECT_FALSE(target_->trace_frames()->FindFrame(
      FrameByTracepoint{1}, static_cast<std::uint32_t>(end_)));  // past the end
}

// Every pc search against the pc of every position (stepping a plain cursor):
// the hit is the first later position with a matching pc, non-instruction
// events and the final state included. The one documented miss: the
// position before the interrupt that moves the pc into far_pc's handler.
TEST_F(TraceTargetReven, FramePcSearchesMatchEveryPosition) {
  std::vector<std::uint64_t> pcs;
  std::vector<std::uint64_t> others;  // positions before a non-instruction event
  ASSERT_TRUE(cursor_->Seek(Position(0)).ok());
  for (std::uint64_t p = 0;; ++p) {
    pcs.push_back(cursor_->Pc(cursor_->current_thread()).value_or(0));
    if (p == end_) break;
    auto event = cursor_->CurrentEvent();
    ASSERT_TRUE(event.ok());
    if ((*event)->kind != core::EventKind::kInstruction) others.push_back(p);
    ASSERT_TRUE(cursor_->StepForward().ok());
  }
  ASSERT_GE(others.size(), 3u);
  const std::uint64_t missed = fx_->info.far_pc_event - 1;  // its event moves the pc
  auto expect = [&](std::uint64_t lo, std::uint64_t hi, bool inside, std::uint64_t first) {
    for (std::uint64_t p = first; p <= end_; ++p) {
      if (p == missed) continue;
      if ((pcs[p] >= lo && pcs[p] <= hi) == inside) return std::optional<std::uint64_t>(p);
    }
    return std::optional<std::uint64_t>();
  };
  auto check = [&](const TraceFrameQuery& query, std::optional<std::uint64_t> want,
                   std::optional<std::uint32_t> current) {
    auto got = target_->trace_frames()->FindFrame(query, current);
    ASSERT_EQ(got.has_value(), want.has_value()) << "from " << (current ? *current + 1 : 0);
    if (got) {
      EXPECT_EQ(got->frame, *want) << "from " << (current ? *current + 1 : 0);
    }
  };
  for (std::uint64_t p : others) {
    // A position before a non-instruction event, found from just before it
    // and from far before it; then the next hit of the same pc.
    for (std::uint64_t back : {std::uint64_t{1}, std::uint64_t{300}}) {
      const auto current = p >= back ? std::optional<std::uint32_t>(p - back) : std::nullopt;
      const std::uint64_t first = current ? *current + 1 : 0;
      check(FrameByPc{pcs[p]}, expect(pcs[p], pcs[p], true, first), current);
      check(FrameInRange{pcs[p] - 2, pcs[p] + 2}, expect(pcs[p] - 2, pcs[p] + 2, true, first),
            current);
    }
    check(FrameByPc{pcs[p]}, expect(pcs[p], pcs[p], true, p + 1), static_cast<std::uint32_t>(p));
  }
  // The final state's pc, from just before it, and a range that only it
  // (or nothing) matches late in the trace.
  check(FrameByPc{pcs[end_]}, expect(pcs[end_], pcs[end_], true, end_ - 1),
        static_cast<std::uint32_t>(end_ - 2));
  const auto& code = fx_->info.code_addresses;
  const core::Address lo = code.front(), hi = code.back();
  for (std::uint64_t first : {std::uint64_t{0}, std::uint64_t{1000}, end_ / 2, end_ - 5}) {
    const auto current = first ? std::optional<std::uint32_t>(first - 1) : std::nullopt;
    check(FrameOutsideRange{lo, hi}, expect(lo, hi, false, first), current);
    check(FrameInRange{lo, lo + 64}, expect(lo, lo + 64, true, first), current);
  }
}

}  // namespace
}  // namespace backstep::gdbstub
