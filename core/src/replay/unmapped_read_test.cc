// Memory a recording unmapped reads as unknown while it is unmapped, forward
// and backward across the unmap, and a range mapped again shows the new
// mapping's contents, never the bytes written before the unmap.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <string>
#include <vector>

#include "backstep/core/cursor.h"
#include "backstep/core/mappings.h"
#include "backstep/core/provenance.h"
#include "backstep/core/trace.h"
#include "backstep/core/usercorn_recording.h"
#include "backstep/testing/usercorn_reading.h"

namespace backstep::core {
namespace {

constexpr Address kRegion = 0x20000000;  // 8 pages: the reader zero-fills it
constexpr std::uint64_t kRegionSize = 0x8000;
constexpr Address kProbe = kRegion + 0x4000;  // region[4*4096]
constexpr std::uint64_t kBigSize = 0x200000;  // over the reader's fill limit

using testing::KnownBytes;
constexpr auto ReadAt = testing::ReadKnownBytes;

std::vector<std::uint8_t> Bytes(std::size_t n, std::uint8_t value) {
  return std::vector<std::uint8_t>(n, value);
}

class UnmappedReadTest : public ::testing::Test {
 protected:
  // Event 0 maps the region, event 1 writes 0xab over region[4*4096..+16),
  // event 2 unmaps it, event 3 maps it again (anonymous), event 4 unmaps it
  // and maps a file there whose recorded contents are 4 bytes 0x5a at
  // region[4*4096], event 5 unmaps the page of region[4*4096] only, event 6
  // maps 2 MiB over the region (a mapping the reader does not zero-fill),
  // event 7 writes 2 bytes 0xcd at region[4*4096 + 2], event 8 runs after.
  void SetUp() override {
    path_ = (std::filesystem::path(::testing::TempDir()) /
             ("unmapped_read_test_" + std::to_string(::getpid()) + ".ucir"))
                .string();
    auto created = CreateUsercornRecording(path_);
    ASSERT_TRUE(created.ok()) << created.status().ToString();
    UsercornRecordingWriter& writer = **created;
    UsercornMapping text{0x400000, 0x1000, kProtRead | kProtExec, 0, 0, "/bin/p", ""};
    std::vector<UsercornMapping> initial{text};
    ASSERT_TRUE(testing::BeginBareRecording(writer, initial, 0x400000).ok());
    auto instruction = testing::BareInstruction;
    const std::uint64_t args[6] = {};
    const UsercornMapping anonymous{kRegion, kRegionSize, kProtRead | kProtWrite, 0, 0, "", ""};
    const UsercornMapping file{kRegion, kRegionSize, kProtRead | kProtWrite, 0, kRegionSize,
                               "/data", "/data"};

    writer.AppendInstruction(instruction(0x400000));  // 0
    writer.BeginSyscall(9, kRegion, args);
    writer.MemMap(anonymous);
    writer.EndSyscall();
    UsercornInstruction store = instruction(0x400002);  // 1
    const MemoryAccess write{kProbe, written_};
    store.writes = {&write, 1};
    writer.AppendInstruction(store);
    writer.AppendInstruction(instruction(0x400004));  // 2
    writer.BeginSyscall(11, 0, args);
    writer.MemUnmap(kRegion, kRegionSize);
    writer.EndSyscall();
    writer.AppendInstruction(instruction(0x400006));  // 3
    writer.BeginSyscall(9, kRegion, args);
    writer.MemMap(anonymous);
    writer.EndSyscall();
    writer.AppendInstruction(instruction(0x400008));  // 4
    writer.BeginSyscall(9, kRegion, args);
    writer.MemUnmap(kRegion, kRegionSize);
    writer.MemMap(file);
    writer.MemWrite(kProbe, file_bytes_);
    writer.EndSyscall();
    writer.AppendInstruction(instruction(0x40000a));  // 5
    writer.BeginSyscall(11, 0, args);
    writer.MemUnmap(kProbe, 0x1000);
    writer.EndSyscall();
    writer.AppendInstruction(instruction(0x40000c));  // 6
    writer.BeginSyscall(9, kRegion, args);
    writer.MemUnmap(kRegion, kRegionSize);
    writer.MemMap({kRegion, kBigSize, kProtRead | kProtWrite, 0, 0, "", ""});
    writer.EndSyscall();
    UsercornInstruction later = instruction(0x40000e);  // 7
    const MemoryAccess later_write{kProbe + 2, later_};
    later.writes = {&later_write, 1};
    writer.AppendInstruction(later);
    writer.AppendInstruction(instruction(0x400010));  // 8
    ASSERT_TRUE(writer.Finish().ok());
    auto opened = testing::OpenRecording(path_, ::testing::TempDir());
    ASSERT_TRUE(opened.ok()) << opened.status().ToString();
    trace_ = opened->trace;
    cursor_ = std::move(opened->cursor);
  }
  void TearDown() override {
    cursor_.reset();
    trace_.reset();
    std::filesystem::remove(path_);
    std::filesystem::remove(path_ + ".bsidx");  // the index beside it
  }

  const std::vector<std::uint8_t> written_ = Bytes(16, 0xab);
  const std::vector<std::uint8_t> file_bytes_ = Bytes(4, 0x5a);
  const std::vector<std::uint8_t> later_ = Bytes(2, 0xcd);
  std::string path_;
  std::shared_ptr<Trace> trace_;
  std::unique_ptr<Cursor> cursor_;
};

TEST_F(UnmappedReadTest, UnmappedBytesAreUnknownForwardAndBackward) {
  ASSERT_TRUE(cursor_->Seek(Position(2)).ok());
  KnownBytes before = ReadAt(*cursor_, kProbe, 16);
  EXPECT_EQ(before.known, Bytes(16, 1));
  EXPECT_EQ(before.values, written_);

  // Forward across the unmap: the whole region is unknown, the written
  // bytes included; the text mapping next to nothing is unaffected.
  ASSERT_TRUE(cursor_->StepForward().ok());
  EXPECT_EQ(ReadAt(*cursor_, kProbe, 16).known, Bytes(16, 0));
  EXPECT_EQ(ReadAt(*cursor_, kRegion, 4096).known, Bytes(4096, 0));
  EXPECT_EQ(ReadAt(*cursor_, 0x400000, 2).known, Bytes(2, 1));

  // Backward across it: the bytes read again.
  ASSERT_TRUE(cursor_->StepBackward().ok());
  KnownBytes again = ReadAt(*cursor_, kProbe, 16);
  EXPECT_EQ(again.known, Bytes(16, 1));
  EXPECT_EQ(again.values, written_);

  // A seek from far away lands on the same answers.
  ASSERT_TRUE(cursor_->Seek(Position(9)).ok());
  ASSERT_TRUE(cursor_->Seek(Position(3)).ok());
  EXPECT_EQ(ReadAt(*cursor_, kProbe, 16).known, Bytes(16, 0));
}

TEST_F(UnmappedReadTest, RemappedRangesShowTheNewMappingNotTheOldBytes) {
  // Anonymous: the zero fill.
  ASSERT_TRUE(cursor_->Seek(Position(4)).ok());
  KnownBytes anonymous = ReadAt(*cursor_, kProbe, 16);
  EXPECT_EQ(anonymous.known, Bytes(16, 1));
  EXPECT_EQ(anonymous.values, Bytes(16, 0));

  // A file: its recorded contents, zeros after them.
  ASSERT_TRUE(cursor_->StepForward().ok());
  KnownBytes file = ReadAt(*cursor_, kProbe, 16);
  EXPECT_EQ(file.known, Bytes(16, 1));
  std::vector<std::uint8_t> expected = Bytes(16, 0);
  std::fill_n(expected.begin(), 4, 0x5a);
  EXPECT_EQ(file.values, expected);

  // One page unmapped: a read across its start is known up to it only.
  ASSERT_TRUE(cursor_->StepForward().ok());
  KnownBytes across = ReadAt(*cursor_, kProbe - 2, 4);
  EXPECT_EQ(across.known, (std::vector<std::uint8_t>{1, 1, 0, 0}));
  EXPECT_EQ(across.values, (std::vector<std::uint8_t>{0, 0, 0, 0}));
  EXPECT_EQ(ReadAt(*cursor_, kProbe + 0x1000, 4).known, Bytes(4, 1));

  // 2 MiB mapped over it, without a fill in the trace: zeros, not the
  // bytes the index last saw there (0x5a, 0xab), then what is written since.
  ASSERT_TRUE(cursor_->StepForward().ok());
  KnownBytes big = ReadAt(*cursor_, kProbe - 8, 32);
  EXPECT_EQ(big.known, Bytes(32, 1));
  EXPECT_EQ(big.values, Bytes(32, 0));
  ASSERT_TRUE(cursor_->StepForward().ok());
  big = ReadAt(*cursor_, kProbe, 16);
  EXPECT_EQ(big.known, Bytes(16, 1));
  expected = Bytes(16, 0);
  expected[2] = expected[3] = 0xcd;
  EXPECT_EQ(big.values, expected);
  KnownBytes beyond = ReadAt(*cursor_, kRegion + kRegionSize, 8);  // never mapped before
  EXPECT_EQ(beyond.known, Bytes(8, 1));
  EXPECT_EQ(beyond.values, Bytes(8, 0));
  // Back before the big mapping: the unmapped page again.
  ASSERT_TRUE(cursor_->Seek(Position(6)).ok());
  EXPECT_EQ(ReadAt(*cursor_, kProbe, 4).known, Bytes(4, 0));
}

TEST_F(UnmappedReadTest, TheTimelineListsTheUnmappedRangesAndIsShared) {
  const MappingTimeline& timeline = trace_->mappings();
  EXPECT_EQ(&timeline, &trace_->mappings());
  auto at = [&](std::uint64_t position) {
    auto state = timeline.StateAt(Position(position));
    EXPECT_TRUE(state.ok()) << state.status().ToString();
    return *state;
  };
  EXPECT_TRUE(at(2)->unmapped.empty());
  const std::vector<Mapping> region{{kRegion, kRegionSize, "", 0, ""}};
  EXPECT_EQ(at(3)->unmapped, region);
  EXPECT_EQ(at(3)->maps.size(), 1u);  // the text only
  EXPECT_TRUE(at(4)->unmapped.empty());
  const std::vector<Mapping> page{{kProbe, 0x1000, "", 0, ""}};
  EXPECT_EQ(at(6)->unmapped, page);
  EXPECT_TRUE(at(6)->refilled.empty());
  EXPECT_TRUE(at(7)->unmapped.empty());
  const std::vector<MappingState::Refill> refilled{{kRegion, kBigSize, 6}};
  EXPECT_EQ(at(7)->refilled, refilled);
  // Positions between the same two changes share one state.
  EXPECT_EQ(at(7).get(), at(9).get());
}

// origin stops where the mappings say the last write no longer holds: at an
// unmapped byte, and at a mapping made over the bytes after their last write.
TEST_F(UnmappedReadTest, OriginStopsAtAnUnmapAndAtAMappingMadeSinceTheWrite) {
  auto steps = Origin(*trace_, kProbe, 4, Position(3));  // after the unmap of event 2
  ASSERT_TRUE(steps.ok()) << steps.status().ToString();
  ASSERT_EQ(steps->size(), 1u);
  EXPECT_EQ(steps->front().end, "unmapped");
  EXPECT_EQ(steps->front().known, Bytes(4, 0));

  // Before the unmap the chain still starts at event 1's store.
  steps = Origin(*trace_, kProbe, 4, Position(2));
  ASSERT_TRUE(steps.ok()) << steps.status().ToString();
  ASSERT_FALSE(steps->empty());
  EXPECT_EQ(steps->front().position, Position(1));

  // After event 6 mapped 2 MiB over the region: the zero fill of event 6,
  // not the file bytes event 4 wrote.
  steps = Origin(*trace_, kProbe, 2, Position(7));
  ASSERT_TRUE(steps.ok()) << steps.status().ToString();
  ASSERT_EQ(steps->size(), 1u);
  EXPECT_EQ(steps->front().end, "zero fill of a mapping made during the run");
  EXPECT_EQ(steps->front().position, Position(6));
  EXPECT_EQ(steps->front().value, Bytes(2, 0));
  EXPECT_EQ(steps->front().known, Bytes(2, 1));

  // Written since (event 7): the chain starts at that write.
  steps = Origin(*trace_, kProbe + 2, 2, Position(9));
  ASSERT_TRUE(steps.ok()) << steps.status().ToString();
  ASSERT_FALSE(steps->empty());
  EXPECT_EQ(steps->front().position, Position(7));
}

}  // namespace
}  // namespace backstep::core
