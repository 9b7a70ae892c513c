// TraceTarget's trace frames on a tfile trace, whose events are frames:
// frame n is the state after event n and carries its own tracepoint.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>

#include "backstep/testing/tfile_fixtures.h"
#include "trace_target/trace_target.h"

namespace backstep::gdbstub {
namespace {

class TraceTargetTfile : public ::testing::Test {
 protected:
  void SetUp() override {
    char name[] = "/tmp/backstep-tfile-target-XXXXXX";
    dir_ = mkdtemp(name);
    std::vector<std::uint8_t> bytes = core::testing::SmallTfile();
    std::ofstream(dir_ + "/small.tf", std::ios::binary)
        .write(reinterpret_cast<const char*>(bytes.data()),
               static_cast<std::streamsize>(bytes.size()));
    auto trace = core::Trace::Open(dir_ + "/small.tf");
    ASSERT_TRUE(trace.ok()) << trace.status().ToString();
    auto target = TraceTarget::Create(*trace, {});
    ASSERT_TRUE(target.ok());
    target_ = std::move(*target);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  // The pc of the selected frame, if known.
  std::optional<std::uint64_t> FramePc(std::uint32_t frame) {
    EXPECT_TRUE(target_->trace_frames()->SelectFrame(frame).ok());
    auto value = target_->ReadRegister(target_->current_thread(), 16);
    EXPECT_TRUE(target_->trace_frames()->SelectFrame(std::nullopt).ok());
    if (!value.ok() || !value->all_known()) return std::nullopt;
    std::uint64_t pc = 0;
    for (int i = 7; i >= 0; --i) pc = pc << 8 | value->bytes[i];
    return pc;
  }

  std::string dir_;
  std::unique_ptr<TraceTarget> target_;
};

TEST_F(TraceTargetTfile, FramesAndTracepoints) {
  ASSERT_EQ(target_->trace_frames()->frame_count(), core::testing::kSmallTfileFrames);
  const std::uint32_t tracepoints[] = {2, 4, 3, 3, 5, 2, 2};
  for (std::uint32_t f = 0; f < core::testing::kSmallTfileFrames; ++f) {
    auto hit = target_->trace_frames()->FindFrame(FrameByNumber{f}, std::nullopt);
    ASSERT_TRUE(hit);
    EXPECT_EQ(hit->tracepoint, tracepoints[f]) << "frame " << f;
  }
  EXPECT_EQ(FramePc(0), 0x401132u);
  EXPECT_EQ(FramePc(2), 0x4011e8u);
  auto hit = target_->trace_frames()->FindFrame(FrameByTracepoint{3}, std::nullopt);
  ASSERT_TRUE(hit);
  EXPECT_EQ(hit->frame, 2u);
  hit = target_->trace_frames()->FindFrame(FrameByTracepoint{3}, 2);
  ASSERT_TRUE(hit);
  EXPECT_EQ(hit->frame, 3u);
  EXPECT_FALSE(target_->trace_frames()->FindFrame(FrameByTracepoint{4}, 1));
}

TEST_F(TraceTargetTfile, PcSearchesMatchTheFramesPcs) {
  const std::uint32_t frames = static_cast<std::uint32_t>(core::testing::kSmallTfileFrames);
  std::vector<std::optional<std::uint64_t>> pcs;
  for (std::uint32_t f = 0; f < frames; ++f) pcs.push_back(FramePc(f));
  for (const auto& pc : pcs) {
    if (!pc) continue;
    for (int current = -1; current < static_cast<int>(frames); ++current) {
      std::optional<std::uint32_t> expected;
      for (std::uint32_t f = current + 1; f < frames && !expected; ++f) {
        if (pcs[f] == pc) expected = f;
      }
      auto from = current < 0 ? std::nullopt : std::optional<std::uint32_t>(current);
      auto hit = target_->trace_frames()->FindFrame(FrameByPc{*pc}, from);
      ASSERT_EQ(hit.has_value(), expected.has_value()) << std::hex << *pc << " after " << current;
      if (hit) {
        EXPECT_EQ(hit->frame, *expected);
      }
      hit = target_->trace_frames()->FindFrame(FrameInRange{*pc, *pc}, from);
      ASSERT_EQ(hit.has_value(), expected.has_value());
      if (hit) {
        EXPECT_EQ(hit->frame, *expected);
      }
    }
  }
  // A selected frame stays selected through a search.
  ASSERT_TRUE(target_->trace_frames()->SelectFrame(2).ok());
  (void)target_->trace_frames()->FindFrame(FrameByPc{0x401132}, 2);
  auto value = target_->ReadRegister(target_->current_thread(), 16);
  ASSERT_TRUE(value.ok() && value->all_known());
  EXPECT_EQ(value->bytes[0], 0xe8);
}

// Position 0 of a tfile is the state before its first frame: no pc. The
// target starts at the first frame, and its history begins there.
TEST_F(TraceTargetTfile, StartsAtTheFirstPositionWithAKnownPc) {
  EXPECT_EQ(target_->first_position(), core::Position(1));
  EXPECT_EQ(target_->position(), core::Position(1));
  auto back = target_->ResumeBackward(ResumeKind::kStep, std::nullopt, nullptr);
  ASSERT_TRUE(back.ok());
  EXPECT_TRUE(std::holds_alternative<HistoryEdge>(*back));
  back = target_->ResumeBackward(ResumeKind::kContinue, std::nullopt, nullptr);
  ASSERT_TRUE(back.ok());
  ASSERT_TRUE(std::holds_alternative<HistoryEdge>(*back));
  EXPECT_EQ(std::get<HistoryEdge>(*back).side, HistoryEdge::Side::kBegin);
  EXPECT_EQ(target_->position(), core::Position(1));

  auto refused = target_->monitor_commands()->RunMonitorCommand("goto 0");
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("before the first position whose pc is known (1)"),
            std::string::npos)
      << refused.status().message();
  target_->armed_moves().ArmGoto(core::Position(0));  // the controller API clamps
  ASSERT_TRUE(target_->Resume(ResumeKind::kStep, std::nullopt, nullptr).ok());
  EXPECT_EQ(target_->position(), core::Position(1));
  auto info = target_->monitor_commands()->RunMonitorCommand("info");
  ASSERT_TRUE(info.ok());
  EXPECT_NE(info->find("start:      1 (the first position whose pc is known"), std::string::npos);

  // Going forward and back again stops at the start, never before it.
  ASSERT_TRUE(target_->Resume(ResumeKind::kStep, std::nullopt, nullptr).ok());
  EXPECT_EQ(target_->position(), core::Position(2));
  ASSERT_TRUE(target_->ResumeBackward(ResumeKind::kStep, std::nullopt, nullptr).ok());
  EXPECT_EQ(target_->position(), core::Position(1));
}

// What gdb uploads at connection and asks of a frame (qTfP, qTfV, qTStatus,
// qTV, qXfer:traceframe-info), from the file's own definitions.
TEST_F(TraceTargetTfile, TracepointDefinitionsVariablesAndCollections) {
  const core::TracepointDefinitions* defs = target_->trace_frames()->tracepoint_definitions();
  ASSERT_NE(defs, nullptr);
  ASSERT_FALSE(defs->tracepoints.empty());
  EXPECT_EQ(defs->tracepoints[0], "T2:401132:E:0:0");
  EXPECT_NE(std::find(defs->tracepoints.begin(), defs->tracepoints.end(), "V2:401132:3:100"),
            defs->tracepoints.end());
  EXPECT_EQ(defs->variables,
            (std::vector<std::string>{"1:0:1:74726163655f74696d657374616d70", "2:0:0:68697473"}));

  EXPECT_FALSE(target_->trace_frames()->TraceframeInfo());  // no frame selected
  ASSERT_TRUE(target_->trace_frames()->SelectFrame(0).ok());
  EXPECT_EQ(target_->trace_frames()->TraceframeInfo(),
            "<traceframe-info><memory start=\"0x404060\" length=\"0x40\"/>"
            "<memory start=\"0x404040\" length=\"0x8\"/></traceframe-info>");
  EXPECT_FALSE(target_->trace_frames()->TraceVariable(2));
  ASSERT_TRUE(target_->trace_frames()->SelectFrame(1).ok());
  EXPECT_EQ(target_->trace_frames()->TraceVariable(2), 1);
  EXPECT_FALSE(target_->trace_frames()->TraceVariable(9));
  EXPECT_EQ(target_->trace_frames()->TraceframeInfo(),
            "<traceframe-info><tvar id=\"2\"/></traceframe-info>");
  ASSERT_TRUE(target_->trace_frames()->SelectFrame(4).ok());
  EXPECT_EQ(target_->trace_frames()->TraceVariable(9), -3);
  ASSERT_TRUE(target_->trace_frames()->SelectFrame(std::nullopt).ok());
  EXPECT_FALSE(target_->trace_frames()->TraceVariable(2));  // the current position is frame 0's
}

}  // namespace
}  // namespace backstep::gdbstub
