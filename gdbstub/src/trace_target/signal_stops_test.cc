// SignalStops on a recording: the stops come from the index's list of noted
// events (core::Trace::noted_events()) and its stream of plain system calls
// (plain_syscalls()), without decoding the trace.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <memory>
#include <variant>
#include <vector>

#include "backstep/core/byte_source.h"
#include "backstep/core/format_registry.h"
#include "backstep/testing/usercorn_reading.h"
#include "trace_target/trace_target.h"

namespace backstep::gdbstub {
namespace {

// Every stop a forward continue meets with system calls `caught` (all when
// empty) and no signal passed, in order, from a decoding pass (no index).
std::vector<std::pair<std::uint64_t, StopReason>> DecodedStops(
    const core::Trace& trace, const std::vector<std::uint64_t>& caught,
    std::uint64_t* signal_at = nullptr) {
  std::vector<std::pair<std::uint64_t, StopReason>> want;
  auto reader = trace.NewReader();
  EXPECT_TRUE(reader.ok());
  if (!reader.ok()) return want;
  core::Event event;
  for (std::uint64_t n = 0;; ++n) {
    auto more = (*reader)->Next(&event);
    EXPECT_TRUE(more.ok());
    if (!more.ok() || !*more) break;
    const core::EventNotes notes = core::ReadEventNotes(event);
    if (notes.signal > 0) {
      want.emplace_back(n, StopReason(Signaled{notes.signal}));
      if (signal_at != nullptr) *signal_at = n;
    }
    const auto number = static_cast<std::uint64_t>(notes.syscall);
    if (notes.syscall >= 0 &&
        (caught.empty() || std::find(caught.begin(), caught.end(), number) != caught.end())) {
      want.emplace_back(n, StopReason(SyscallEntry{number}));
      want.emplace_back(n + 1, StopReason(SyscallReturn{number}));
    }
  }
  std::stable_sort(want.begin(), want.end(), [](const auto& a, const auto& b) {
    const auto rank = [](const StopReason& r) {
      return std::holds_alternative<SyscallReturn>(r) ? 0
             : std::holds_alternative<Signaled>(r)    ? 1
                                                      : 2;
    };
    return a.first != b.first ? a.first < b.first : rank(a.second) < rank(b.second);
  });
  return want;
}

class SignalStopsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    path_ = (std::filesystem::path(::testing::TempDir()) /
             ("signal_stops_test_" + std::to_string(::getpid()) + ".ucir"))
                .string();
    const core::Status written = core::testing::WriteNotesRecording(path_);
    ASSERT_TRUE(written.ok()) << written.ToString();
    auto source = core::MapFile(path_);
    ASSERT_TRUE(source.ok()) << source.status().ToString();
    core::ReaderFactory factory = [source = *source, readers = readers_] {
      ++*readers;
      return core::OpenTraceSource(source);
    };
    core::OpenOptions options;
    options.cache_dir = ::testing::TempDir();
    auto trace = core::Trace::OpenWith(factory, path_, options);
    ASSERT_TRUE(trace.ok()) << trace.status().ToString();
    trace_ = *trace;
  }
  void TearDown() override {
    std::filesystem::remove(path_);
    std::filesystem::remove(path_ + ".bsidx");
  }

  std::string path_;
  std::shared_ptr<std::atomic<int>> readers_ = std::make_shared<std::atomic<int>>(0);
  std::shared_ptr<core::Trace> trace_;
};

// The slots and the end of the process, read with no reader opened: only
// the served position's cursor exists.
TEST_F(SignalStopsTest, SlotsComeFromTheIndexWithoutDecoding) {
  auto cursor = trace_->NewCursor();
  ASSERT_TRUE(cursor.ok());
  const core::Position end(trace_->event_count());
  ServedPosition served(trace_, std::move(*cursor), core::Position(0), end);
  SignalStops stops(*trace_, served);
  ASSERT_TRUE(stops.active());
  const int readers = *readers_;
  auto execs = stops.Execs();  // the first lookup reads the slots
  ASSERT_TRUE(execs.ok()) << execs.status().ToString();
  EXPECT_TRUE((*execs)->empty());
  EXPECT_EQ(*readers_, readers) << "the stub decoded the trace";

  // Every slot a forward continue from 0 to the end meets, in order.
  stops.CatchSyscalls(std::vector<std::uint64_t>{});
  std::vector<std::pair<std::uint64_t, StopReason>> met;
  core::StopEvent to_end;
  to_end.position = end;
  to_end.reason = core::StopEvent::Reason::kHistoryEnd;
  for (int guard = 0; guard < 16; ++guard) {
    auto slot = stops.SlotBefore(core::Direction::kForward, to_end);
    ASSERT_TRUE(slot.ok()) << slot.status().ToString();
    if (!*slot) break;
    met.emplace_back((*slot)->position(), stops.StoppedAt(**slot));
  }
  EXPECT_EQ(*readers_, readers);
  std::uint64_t signal_at = 0;
  const std::vector<std::pair<std::uint64_t, StopReason>> want =
      DecodedStops(*trace_, {}, &signal_at);
  ASSERT_EQ(want.size(), 9u);  // 4 system calls, each entered and returned; a signal
  EXPECT_EQ(met, want);
  EXPECT_GT(signal_at, 0u);

  // The recorded siginfo at the delivery.
  ASSERT_TRUE(served.cursor().Seek(core::Position(signal_at)).ok());
  stops.StoppedAt(SignalStops::Slot{3 * signal_at + SignalStops::Slot::kSignal,
                                    SignalStops::Slot::kSignal, 11, core::ThreadId(1)});
  auto info = stops.SignalInfo();
  ASSERT_TRUE(info.ok()) << info.status().ToString();
  EXPECT_EQ(*info, std::vector<std::uint8_t>(128, 0x11));
}

// Thousands of system calls, most of them plain (the index's stream, not
// slots): `catch syscall` stops at the same calls as a decoding pass finds,
// forward from the start and backward from the end, for every call or a
// few numbers, and the continues decode nothing.
TEST_F(SignalStopsTest, CaughtPlainSystemCallsComeFromTheIndexStream) {
  trace_.reset();
  ASSERT_TRUE(core::testing::WriteSyscallStormRecording(path_, 1100).ok());
  core::OpenOptions options;
  options.cache_dir = ::testing::TempDir();
  options.keyframe_interval = 64;  // each stop's seek replays few events
  auto trace = core::Trace::Open(path_, options);
  ASSERT_TRUE(trace.ok()) << trace.status().ToString();
  trace_ = *trace;
  ASSERT_TRUE(trace_->plain_syscalls().has_value());
  ASSERT_GT(trace_->plain_syscalls()->block_count(), 3u);
  const core::Position end(trace_->event_count());
  for (const std::vector<std::uint64_t>& caught :
       {std::vector<std::uint64_t>{}, std::vector<std::uint64_t>{39},
        std::vector<std::uint64_t>{9, 1}}) {
    const std::vector<std::pair<std::uint64_t, StopReason>> want = DecodedStops(*trace_, caught);
    ASSERT_GT(want.size(), 20u);
    auto cursor = trace_->NewCursor();
    ASSERT_TRUE(cursor.ok());
    ServedPosition served(trace_, std::move(*cursor), core::Position(0), end);
    SignalStops stops(*trace_, served);
    stops.CatchSyscalls(caught);
    // Every slot a continue to `to` meets, run control moving to each.
    auto run = [&](core::Direction direction, core::Position to) {
      std::vector<std::pair<std::uint64_t, StopReason>> met;
      core::StopEvent edge;
      edge.reason = core::StopEvent::Reason::kHistoryEnd;
      edge.position = to;
      for (std::size_t guard = 0; guard <= want.size(); ++guard) {
        auto slot = stops.SlotBefore(direction, edge);
        EXPECT_TRUE(slot.ok()) << slot.status().ToString();
        if (!slot.ok() || !*slot) break;
        EXPECT_TRUE(served.cursor().Seek(core::Position((*slot)->position())).ok());
        met.emplace_back((*slot)->position(), stops.StoppedAt(**slot));
      }
      return met;
    };
    EXPECT_EQ(run(core::Direction::kForward, end), want) << caught.size();
    // Backward from the end.
    stops.ClearStop();
    ASSERT_TRUE(served.cursor().Seek(end).ok());
    std::vector<std::pair<std::uint64_t, StopReason>> back =
        run(core::Direction::kBackward, core::Position(0));
    std::reverse(back.begin(), back.end());
    EXPECT_EQ(back, want) << caught.size();
  }
}

// Killed by SIGKILL: a forward continue at the end reports it.
TEST_F(SignalStopsTest, EndOfProcessFromTheIndex) {
  auto target = TraceTarget::Create(trace_, {});
  ASSERT_TRUE(target.ok()) << target.status().ToString();
  ASSERT_NE((*target)->signals(), nullptr);
  const int readers = *readers_;
  auto first = (*target)->Resume(ResumeKind::kContinue, std::nullopt, nullptr);
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  // The delivery of SIGSEGV stops the continue (signals not passed).
  EXPECT_EQ(*first, StopReason(Signaled{11}));
  auto second = (*target)->Resume(ResumeKind::kContinue, std::nullopt, nullptr);
  ASSERT_TRUE(second.ok());
  EXPECT_TRUE(std::holds_alternative<HistoryEdge>(*second));
  auto third = (*target)->Resume(ResumeKind::kContinue, std::nullopt, nullptr);
  ASSERT_TRUE(third.ok());
  EXPECT_EQ(*third, StopReason(Terminated{9}));
  EXPECT_EQ(*readers_, readers) << "the stub decoded the trace";
}

}  // namespace
}  // namespace backstep::gdbstub
