// Far frames of a long gdb-written tfile through the index and a cursor:
// every frame reached in any order (jumps across keyframes, back and forth,
// backward steps) holds exactly what the reader's own decoding of that frame
// says. Guards the cursor's replay from the last register clear
// (TraceReader::EventPosition), which skips the keyframe for tfile frames.
#include <gtest/gtest.h>

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "backstep/core/cursor.h"
#include "backstep/core/trace.h"
#include "backstep/testing/tfile_fixtures.h"
#include "formats/tfile/tfile_reader.h"
#include "replay/trace_index_of.h"

namespace backstep::core {
namespace {

constexpr std::uint64_t kFrames = 10'000;

class TfileFarFramesTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    const std::string dir = ::testing::TempDir() + "/tfile_far_frames_test";
    std::filesystem::create_directories(dir);
    path_ = new std::string(dir + "/stretched.tf");
    const std::string sample = testing::SamplesDir() + "/gdb_tfile/stepping_amd64.tf";
    Status s = testing::WriteStretchedTfile(sample, *path_, kFrames, 816);
    ASSERT_TRUE(s.ok()) << s.ToString();
  }
  static void TearDownTestSuite() {
    delete path_;
    path_ = nullptr;
  }

  void SetUp() override {
    auto oracle_source = MapFile(*path_);
    ASSERT_TRUE(oracle_source.ok());
    auto oracle_reader = TfileReader::Open(*oracle_source);
    ASSERT_TRUE(oracle_reader.ok()) << oracle_reader.status().ToString();
    oracle_ = std::move(*oracle_reader);
    ASSERT_EQ(oracle_->frame_count(), kFrames);
    auto trace = Trace::OpenWith(
        []() -> Expected<std::unique_ptr<TraceReader>> {
          BACKSTEP_ASSIGN_OR_RETURN(auto source, MapFile(*path_));
          BACKSTEP_ASSIGN_OR_RETURN(auto reader, TfileReader::Open(source));
          return std::unique_ptr<TraceReader>(std::move(reader));
        },
        "");
    ASSERT_TRUE(trace.ok()) << trace.status().ToString();
    trace_ = std::move(*trace);
    ASSERT_GT(kFrames, 2 * TraceIndexOf(*trace_).keyframe_interval());
  }

  // The cursor (at position frame + 1) shows frame `frame` as the reader
  // decodes it: every register, every collected byte, and only those.
  void ExpectFrame(Cursor& c, std::uint64_t frame) {
    SCOPED_TRACE("frame " + std::to_string(frame));
    ASSERT_EQ(c.position().value, frame + 1);
    auto expected = oracle_->FrameRegisters(frame);
    ASSERT_TRUE(expected.ok());
    auto regs = c.Registers(ThreadId(1));
    ASSERT_TRUE(regs.ok());
    EXPECT_TRUE(**regs == *expected);
    EXPECT_EQ((*regs)->u64(*X86_64().Find("rax")), frame);  // the stretcher's mark
    auto decoded = oracle_->ReadFrame(frame);
    ASSERT_TRUE(decoded.ok());
    for (const TfileMemoryBlock& m : decoded->memory) {
      std::vector<std::uint8_t> out(m.data.size()), known(m.data.size());
      ASSERT_TRUE(c.ReadMemory(m.address, out, known).ok());
      EXPECT_EQ(out, std::vector<std::uint8_t>(m.data.begin(), m.data.end()));
      EXPECT_EQ(known, std::vector<std::uint8_t>(m.data.size(), 1));
    }
    if (decoded->memory.empty()) {
      // A stepping frame: the hit frames' `a` is not collected here.
      std::uint8_t out[8], known[8];
      ASSERT_TRUE(c.ReadMemory(hit_memory_, out, known).ok());
      EXPECT_EQ(std::vector<std::uint8_t>(known, known + 8), std::vector<std::uint8_t>(8, 0));
    }
  }

  static std::string* path_;
  std::unique_ptr<TfileReader> oracle_;
  std::shared_ptr<Trace> trace_;
  Address hit_memory_ = 0;
};

std::string* TfileFarFramesTest::path_ = nullptr;

TEST_F(TfileFarFramesTest, JumpsInAnyOrder) {
  auto first = oracle_->ReadFrame(0);
  ASSERT_TRUE(first.ok());
  ASSERT_FALSE(first->memory.empty());  // the sample's hit frame collects `a`
  hit_memory_ = first->memory[0].address;
  auto cursor = trace_->NewCursor();
  ASSERT_TRUE(cursor.ok());
  Cursor& c = **cursor;
  const std::uint64_t k = TraceIndexOf(*trace_).keyframe_interval();
  for (std::uint64_t frame :
       {kFrames - 1, std::uint64_t{0}, 3 * k - 1, 3 * k, 3 * k - 2, k + 7, kFrames / 2,
        kFrames / 2 + 1, kFrames / 2 + 5, kFrames - 2, k - 1, std::uint64_t{1}, 2 * k + 3}) {
    ASSERT_TRUE(c.Seek(Position(frame + 1)).ok());
    ExpectFrame(c, frame);
    auto event = c.CurrentEvent();
    if (frame + 1 < kFrames) {
      ASSERT_TRUE(event.ok());
      EXPECT_EQ((*event)->description.substr(0, 12), "tracepoint 2");
    }
  }
}

TEST_F(TfileFarFramesTest, StepsBackAndForthFarAway) {
  auto first = oracle_->ReadFrame(0);
  ASSERT_TRUE(first.ok());
  hit_memory_ = first->memory[0].address;
  auto cursor = trace_->NewCursor();
  ASSERT_TRUE(cursor.ok());
  Cursor& c = **cursor;
  const std::uint64_t k = TraceIndexOf(*trace_).keyframe_interval();
  const std::uint64_t far = 4 * k + 2;  // steps back across keyframe 4
  ASSERT_TRUE(c.Seek(Position(far + 1)).ok());
  for (std::uint64_t frame = far; frame + 5 > far; --frame) {
    ExpectFrame(c, frame);
    ASSERT_TRUE(c.StepBackward().ok());
  }
  ExpectFrame(c, far - 5);
  ASSERT_TRUE(c.StepForward().ok());
  ExpectFrame(c, far - 4);
}

}  // namespace
}  // namespace backstep::core
