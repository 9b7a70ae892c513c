// TraceTarget's trace frames on a tfile trace, whose events are frames:
// frame n is the state after event n and carries its own tracepoint.
#include <gtest/gtest.h>
#include <unistd.h>

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
    EXPECT_TRUE(target_->SelectFrame(frame).ok());
    auto value = target_->ReadRegister(target_->current_thread(), 16);
    EXPECT_TRUE(target_->SelectFrame(std::nullopt).ok());
    if (!value.ok() || !value->all_known()) return std::nullopt;
    std::uint64_t pc = 0;
    for (int i = 7; i >= 0; --i) pc = pc << 8 | value->bytes[i];
    return pc;
  }

  std::string dir_;
  std::unique_ptr<TraceTarget> target_;
};

TEST_F(TraceTargetTfile, FramesAndTracepoints) {
  ASSERT_EQ(target_->frame_count(), core::testing::kSmallTfileFrames);
  const std::uint32_t tracepoints[] = {2, 4, 3, 3, 5, 2, 2};
  for (std::uint32_t f = 0; f < core::testing::kSmallTfileFrames; ++f) {
    auto hit = target_->FindFrame(FrameByNumber{f}, std::nullopt);
    ASSERT_TRUE(hit);
    EXPECT_EQ(hit->tracepoint, tracepoints[f]) << "frame " << f;
  }
  EXPECT_EQ(FramePc(0), 0x401132u);
  EXPECT_EQ(FramePc(2), 0x4011e8u);
  auto hit = target_->FindFrame(FrameByTracepoint{3}, std::nullopt);
  ASSERT_TRUE(hit);
  EXPECT_EQ(hit->frame, 2u);
  hit = target_->FindFrame(FrameByTracepoint{3}, 2);
  ASSERT_TRUE(hit);
  EXPECT_EQ(hit->frame, 3u);
  EXPECT_FALSE(target_->FindFrame(FrameByTracepoint{4}, 1));
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
      auto hit = target_->FindFrame(FrameByPc{*pc}, from);
      ASSERT_EQ(hit.has_value(), expected.has_value()) << std::hex << *pc << " after " << current;
      if (hit) EXPECT_EQ(hit->frame, *expected);
      hit = target_->FindFrame(FrameInRange{*pc, *pc}, from);
      ASSERT_EQ(hit.has_value(), expected.has_value());
      if (hit) EXPECT_EQ(hit->frame, *expected);
    }
  }
  // A selected frame stays selected through a search.
  ASSERT_TRUE(target_->SelectFrame(2).ok());
  (void)target_->FindFrame(FrameByPc{0x401132}, 2);
  auto value = target_->ReadRegister(target_->current_thread(), 16);
  ASSERT_TRUE(value.ok() && value->all_known());
  EXPECT_EQ(value->bytes[0], 0xe8);
}

}  // namespace
}  // namespace backstep::gdbstub
