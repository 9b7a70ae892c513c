// The cursor reads the never-written bytes of a mapping whose zero fill the
// trace leaves out (a usercorn MEM_MAP over 1 MiB) as known zeros, only
// while that mapping exists, and keeps the bytes events wrote.
#include <gtest/gtest.h>
#include <unistd.h>

#include <array>
#include <filesystem>
#include <string>
#include <vector>

#include "backstep/core/cursor.h"
#include "backstep/core/provenance.h"
#include "backstep/core/trace.h"
#include "backstep/core/usercorn_recording.h"
#include "backstep/testing/usercorn_reading.h"

namespace backstep::core {
namespace {

constexpr Address kBig = 0x10000000;  // 2 MiB: over the reader's fill limit
constexpr std::uint64_t kBigSize = 0x200000;
constexpr Address kTop = kBig + kBigSize;  // the first byte after it

using testing::KnownBytes;
constexpr auto ReadAt = testing::ReadKnownBytes;

class UnfilledReadTest : public ::testing::Test {
 protected:
  // Event 0 maps [kBig, kTop) (a thread stack's size and flags), event 1
  // writes the 8 bytes under kTop (a thread's first push), event 2 unmaps
  // the mapping, event 3 runs after.
  void SetUp() override {
    path_ = (std::filesystem::path(::testing::TempDir()) /
             ("unfilled_read_test_" + std::to_string(::getpid()) + ".ucir"))
                .string();
    auto writer = CreateUsercornRecording(path_);
    ASSERT_TRUE(writer.ok()) << writer.status().ToString();
    UsercornMapping text{0x400000, 0x1000, kProtRead | kProtExec, 0, 0, "/bin/p", ""};
    std::vector<UsercornMapping> initial{text};
    ASSERT_TRUE(testing::BeginBareRecording(**writer, initial, 0x400000).ok());
    auto instruction = testing::BareInstruction;
    const std::uint64_t args[6] = {};
    (*writer)->AppendInstruction(instruction(0x400000));
    (*writer)->BeginSyscall(9, kBig, args);
    (*writer)->MemMap({kBig, kBigSize, kProtRead | kProtWrite, 0, 0, "", ""});
    (*writer)->EndSyscall();
    UsercornInstruction push = instruction(0x400002);
    const MemoryAccess write{kTop - 8, pushed_};
    push.writes = {&write, 1};
    (*writer)->AppendInstruction(push);
    (*writer)->AppendInstruction(instruction(0x400004));
    (*writer)->BeginSyscall(11, 0, args);
    (*writer)->MemUnmap(kBig, kBigSize);
    (*writer)->EndSyscall();
    (*writer)->AppendInstruction(instruction(0x400006));
    ASSERT_TRUE((*writer)->Finish().ok());
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

  const std::array<std::uint8_t, 8> pushed_ = {1, 2, 3, 4, 5, 6, 7, 8};
  std::string path_;
  std::shared_ptr<Trace> trace_;
  std::unique_ptr<Cursor> cursor_;
};

TEST_F(UnfilledReadTest, NeverWrittenBytesReadAsZeroWhileMapped) {
  const std::vector<std::uint8_t> unknown16(16, 0);
  // Before the mapping exists: unknown.
  EXPECT_EQ(ReadAt(*cursor_, kTop - 16, 16).known, unknown16);

  ASSERT_TRUE(cursor_->Seek(Position(2)).ok());
  // Under the write: zeros, known; the written bytes as written.
  KnownBytes top = ReadAt(*cursor_, kTop - 16, 16);
  EXPECT_EQ(top.known, std::vector<std::uint8_t>(16, 1));
  EXPECT_EQ(top.values,
            (std::vector<std::uint8_t>{0, 0, 0, 0, 0, 0, 0, 0, 1, 2, 3, 4, 5, 6, 7, 8}));
  KnownBytes bottom = ReadAt(*cursor_, kBig, 600);
  EXPECT_EQ(bottom.known, std::vector<std::uint8_t>(600, 1));
  EXPECT_EQ(bottom.values, std::vector<std::uint8_t>(600, 0));
  // Past the mapping's end: unknown again.
  KnownBytes across = ReadAt(*cursor_, kTop - 2, 4);
  EXPECT_EQ(across.known, (std::vector<std::uint8_t>{1, 1, 0, 0}));
  EXPECT_EQ(across.values, (std::vector<std::uint8_t>{7, 8, 0, 0}));

  // Back before the write: all zeros.
  ASSERT_TRUE(cursor_->StepBackward().ok());
  top = ReadAt(*cursor_, kTop - 16, 16);
  EXPECT_EQ(top.known, std::vector<std::uint8_t>(16, 1));
  EXPECT_EQ(top.values, std::vector<std::uint8_t>(16, 0));

  // After the unmap: unknown, the written bytes too (unmapped memory).
  ASSERT_TRUE(cursor_->Seek(Position(4)).ok());
  EXPECT_EQ(ReadAt(*cursor_, kBig, 16).known, unknown16);
  EXPECT_EQ(ReadAt(*cursor_, kTop - 16, 16).known, unknown16);
}

// origin names the fill as the end of the chain, not the initial image.
TEST_F(UnfilledReadTest, OriginEndsAtTheMappingsZeroFill) {
  auto steps = Origin(*trace_, kBig + 0x100, 8, Position(2));
  ASSERT_TRUE(steps.ok()) << steps.status().ToString();
  ASSERT_EQ(steps->size(), 1u);
  EXPECT_EQ(steps->front().end, "zero fill of a mapping made during the run");
  EXPECT_EQ(steps->front().value, std::vector<std::uint8_t>(8, 0));
  EXPECT_EQ(steps->front().known, std::vector<std::uint8_t>(8, 1));
  // The text mapping, there from the start, still ends at the initial image.
  steps = Origin(*trace_, 0x400000, 2, Position(2));
  ASSERT_TRUE(steps.ok()) << steps.status().ToString();
  EXPECT_EQ(steps->back().end, "initial image");
}

}  // namespace
}  // namespace backstep::core
