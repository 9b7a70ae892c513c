// TraceTarget over generated multi-thread FakeTraces: per-thread steps
// against a brute-force scan of the events, registers per thread, and
// read/access watchpoints (fake traces can record reads).
#include <gtest/gtest.h>

#include "backstep/core/cursor.h"
#include "backstep/testing/fake_trace.h"
#include "backstep/testing/fake_trace_generator.h"
#include "trace_target/trace_target.h"

namespace backstep::gdbstub {
namespace {

using core::Position;
using core::ThreadId;

class TraceTargetThreads : public ::testing::Test {
 protected:
  void SetUp() override {
    core::testing::FakeTraceOptions options;
    options.seed = 5;
    options.events = 1500;
    options.threads = 3;
    options.records_reads = true;
    fake_ = core::testing::GenerateFakeTrace(options);
    core::OpenOptions open;
    open.keyframe_interval = 64;
    auto trace = core::testing::OpenFakeInMemory(fake_, open);
    ASSERT_TRUE(trace.ok()) << trace.status().ToString();
    trace_ = *trace;
    auto target = TraceTarget::Create(trace_, {});
    ASSERT_TRUE(target.ok());
    target_ = std::move(*target);
  }
  void GoTo(std::uint64_t p) {
    target_->armed_moves().ArmGoto(Position(p));
    ASSERT_TRUE(target_->Resume(ResumeKind::kStep, std::nullopt, nullptr).ok());
  }
  // Brute force over the events: the first/last event of `thread` at or
  // after / before `p`.
  std::optional<std::uint64_t> NextOf(ThreadId thread, std::uint64_t p) const {
    for (std::uint64_t e = p; e < fake_.events.size(); ++e) {
      if (fake_.events[e].thread == thread) return e;
    }
    return std::nullopt;
  }
  std::optional<std::uint64_t> PrevOf(ThreadId thread, std::uint64_t p) const {
    for (std::uint64_t e = p; e-- > 0;) {
      if (fake_.events[e].thread == thread) return e;
    }
    return std::nullopt;
  }

  core::testing::FakeTrace fake_;
  std::shared_ptr<core::Trace> trace_;
  std::unique_ptr<TraceTarget> target_;
};

TEST_F(TraceTargetThreads, StepsFollowTheSteppedThread) {
  std::vector<ThreadId> threads = trace_->threads();
  ASSERT_GE(threads.size(), 2u);
  const std::uint64_t end = trace_->event_count();
  for (std::uint64_t start : {std::uint64_t{0}, std::uint64_t{17}, end / 2, end - 3, end}) {
    for (ThreadId thread : threads) {
      GoTo(start);
      auto stop = target_->Resume(ResumeKind::kStep, thread, nullptr);
      ASSERT_TRUE(stop.ok());
      std::optional<std::uint64_t> e = NextOf(thread, start);
      if (!e) {
        EXPECT_EQ(*stop, StopReason(HistoryEdge{HistoryEdge::Side::kEnd}));
        EXPECT_EQ(target_->position(), Position(start));
      } else {
        EXPECT_EQ(*stop, StopReason(DoneStep{}));
        EXPECT_EQ(target_->position(), Position(NextOf(thread, *e + 1).value_or(*e + 1)));
        EXPECT_EQ(target_->current_thread(), thread);
      }
      GoTo(start);
      stop = target_->ResumeBackward(ResumeKind::kStep, thread, nullptr);
      ASSERT_TRUE(stop.ok());
      e = PrevOf(thread, start);
      if (!e) {
        EXPECT_EQ(*stop, StopReason(HistoryEdge{HistoryEdge::Side::kBegin}));
        EXPECT_EQ(target_->position(), Position(start));
      } else {
        EXPECT_EQ(*stop, StopReason(DoneStep{}));
        EXPECT_EQ(target_->position(), Position(*e));
        EXPECT_EQ(target_->current_thread(), thread);
      }
    }
  }
}

TEST_F(TraceTargetThreads, StepsOfAnyThreadUseTheCurrentOne) {
  GoTo(100);
  ThreadId current = target_->current_thread();
  ASSERT_TRUE(target_->ResumeBackward(ResumeKind::kStep, std::nullopt, nullptr).ok());
  EXPECT_EQ(target_->position(), Position(*PrevOf(current, 100)));
  EXPECT_EQ(target_->current_thread(), current);
}

TEST_F(TraceTargetThreads, RegistersAndThreadList) {
  auto cursor = trace_->NewCursor();
  ASSERT_TRUE(cursor.ok());
  const std::uint64_t p = trace_->event_count() / 2;
  GoTo(p);
  ASSERT_TRUE((*cursor)->Seek(Position(p)).ok());
  std::vector<ThreadInfo> threads = target_->Threads();
  ASSERT_EQ(threads.size(), trace_->threads().size());  // every thread, at any position
  const auto slots = core::X86_64().GdbLayout(core::kDefaultX86_64Features);
  for (const ThreadInfo& info : threads) {
    EXPECT_TRUE(target_->HasThread(info.id));
    auto file = (*cursor)->Registers(info.id);
    ASSERT_TRUE(file.ok());
    for (const core::GdbSlot& slot : slots) {
      auto value = target_->ReadRegister(info.id, slot.regnum);
      ASSERT_TRUE(value.ok());
      std::vector<std::uint8_t> expected(slot.size);
      bool known = (*file)->Read(slot.reg, expected);
      ASSERT_EQ(value->all_known(), known);
      if (known) {
        EXPECT_TRUE(std::equal(expected.begin(), expected.end(), value->bytes.begin()));
      }
    }
  }
  EXPECT_FALSE(target_->HasThread(ThreadId(424242)));
}

TEST_F(TraceTargetThreads, ReadAndAccessWatchpoints) {
  ASSERT_TRUE(target_->watchpoints()->Supports(WatchKind::kRead));
  ASSERT_TRUE(target_->watchpoints()->Supports(WatchKind::kAccess));
  auto regions = core::testing::FakeDataRegions(core::AddressKind::kVirtual);
  ASSERT_FALSE(regions.empty());
  const core::Address addr = regions.front().first;
  const std::uint64_t length = regions.front().second - regions.front().first;
  for (WatchKind kind : {WatchKind::kRead, WatchKind::kAccess}) {
    GoTo(0);
    ASSERT_TRUE(target_->watchpoints()->InsertWatchpoint(kind, addr, length).ok());
    core::StopCondition condition;
    condition.watches.push_back(
        {addr, length,
         kind == WatchKind::kRead ? core::WatchKind::kRead : core::WatchKind::kAccess});
    auto expected = core::RunUntil(*trace_, Position(0), core::Direction::kForward, condition);
    ASSERT_TRUE(expected.ok());
    auto stop = target_->Resume(ResumeKind::kContinue, std::nullopt, nullptr);
    ASSERT_TRUE(stop.ok());
    ASSERT_EQ(expected->reason, core::StopEvent::Reason::kWatch);
    ASSERT_TRUE(std::holds_alternative<Watch>(*stop));
    EXPECT_EQ(std::get<Watch>(*stop).kind, kind);
    EXPECT_EQ(std::get<Watch>(*stop).addr, expected->address);
    EXPECT_EQ(target_->position(), expected->position);
    EXPECT_EQ(target_->current_thread(), expected->thread);
    ASSERT_TRUE(target_->watchpoints()->RemoveWatchpoint(kind, addr, length).ok());
  }
}

}  // namespace
}  // namespace backstep::gdbstub
