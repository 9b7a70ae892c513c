#include "backstep/core/mappings.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>

#include "backstep/core/usercorn_recording.h"
#include "backstep/testing/usercorn_reading.h"

namespace backstep::core {
namespace {

using Kind = MappingChange::Kind;

TEST(ParseMappingChanges, ReadsTheUsercornDecoderDescriptions) {
  auto changes = ParseMappingChanges(
      "syscall 9(0x0, 0x2000) = 0x7000; map 0x7000+0x2000 r-- /lib/a b.so /lib/a b.so@0x1000; "
      "map 0x9000+0x200000 rw- [heap] (not zero-filled); map 0x1000+0x1000 rw- (not zero-filled); "
      "unmap 0x7000+0x1000; "
      "protect 0x8000+0x1000 --x; page fault");
  ASSERT_EQ(changes.size(), 5u);
  EXPECT_EQ(changes[0], (MappingChange{Kind::kMap, 0x7000, 0x2000, "r--", "/lib/a b.so", 0x1000}));
  EXPECT_EQ(changes[1], (MappingChange{Kind::kMap, 0x9000, 0x200000, "rw-", "[heap]", 0, true}));
  EXPECT_EQ(changes[2], (MappingChange{Kind::kMap, 0x1000, 0x1000, "rw-", "", 0, true}));
  EXPECT_EQ(changes[3], (MappingChange{Kind::kUnmap, 0x7000, 0x1000, "", "", 0}));
  EXPECT_EQ(changes[4], (MappingChange{Kind::kProtect, 0x8000, 0x1000, "--x", "", 0}));
}

TEST(ParseMappingChanges, SkipsMalformedParts) {
  EXPECT_TRUE(ParseMappingChanges("map 0x10 r--; map 0x0+0x0 r--; unmap 0x1+zz; "
                                  "protect 0x1000+0x1000 rwz; map 0xffffffffffff0000+0x20000 r--")
                  .empty());
}

TEST(ApplyMappingChange, SplitsJoinsAndKeepsFileOffsets) {
  std::map<Address, Mapping> maps;
  ApplyMappingChange(maps, {Kind::kMap, 0x10000, 0x4000, "r-x", "/lib/x.so", 0x2000});
  ApplyMappingChange(maps, {Kind::kProtect, 0x11000, 0x1000, "r--", "", 0});
  ApplyMappingChange(maps, {Kind::kUnmap, 0x13000, 0x1000, "", "", 0});
  ApplyMappingChange(maps, {Kind::kMap, 0x20000, 0x1000, "rw-", "[heap]", 0});
  ApplyMappingChange(maps, {Kind::kMap, 0x21000, 0x1000, "rw-", "[heap]", 0});
  EXPECT_EQ(JoinedMappings(maps),
            (std::vector<Mapping>{{0x10000, 0x1000, "r-x", 0x2000, "/lib/x.so"},
                                  {0x11000, 0x1000, "r--", 0x3000, "/lib/x.so"},
                                  {0x12000, 0x1000, "r-x", 0x4000, "/lib/x.so"},
                                  {0x20000, 0x2000, "rw-", 0, "[heap]"}}));
  // A file mapping's pieces stay apart (glibc's RELRO after mprotect);
  // anonymous ones join again.
  ApplyMappingChange(maps, {Kind::kProtect, 0x11000, 0x1000, "r-x", "", 0});
  ApplyMappingChange(maps, {Kind::kProtect, 0x20000, 0x1000, "r--", "", 0});
  ApplyMappingChange(maps, {Kind::kProtect, 0x20000, 0x1000, "rw-", "", 0});
  EXPECT_EQ(JoinedMappings(maps),
            (std::vector<Mapping>{{0x10000, 0x1000, "r-x", 0x2000, "/lib/x.so"},
                                  {0x11000, 0x1000, "r-x", 0x3000, "/lib/x.so"},
                                  {0x12000, 0x1000, "r-x", 0x4000, "/lib/x.so"},
                                  {0x20000, 0x2000, "rw-", 0, "[heap]"}}));
}

TEST(FillUnfilledMappings, ZeroesOnlyUnknownBytesOfUnfilledMappings) {
  std::vector<Mapping> maps = {
      {0x1000, 0x1000, "rw-", 0, "", false},  // zero-filled by the trace: left alone
      {0x2000, 0x2000, "rw-", 0, "", true},   // unfilled, e.g. a thread stack
  };
  // 0x1ffe..0x2003 and beyond the mapping's end at 0x4000 (not tested here).
  std::vector<std::uint8_t> out = {0xaa, 0xaa, 0xaa, 0x55, 0xaa, 0xaa};
  std::vector<std::uint8_t> known = {0, 0, 0, 1, 0, 0};
  FillUnfilledMappings(maps, 0x1ffe, out, known);
  EXPECT_EQ(out, (std::vector<std::uint8_t>{0xaa, 0xaa, 0, 0x55, 0, 0}));
  EXPECT_EQ(known, (std::vector<std::uint8_t>{0, 0, 1, 1, 1, 1}));
}

TEST(FillUnfilledMappings, StopsAtTheMappingsEndAndTheTopOfMemory) {
  std::vector<Mapping> maps = {{0xfffffffffffff000, 0x1000, "rw-", 0, "", true}};
  std::vector<std::uint8_t> out(4, 0xaa), known(4, 0);
  FillUnfilledMappings(maps, 0xffffffffffffeffe, out, known);
  EXPECT_EQ(known, (std::vector<std::uint8_t>{0, 0, 1, 1}));
  std::vector<std::uint8_t> top(2, 0xaa), top_known(2, 0);
  FillUnfilledMappings(maps, 0xfffffffffffffffe, top, top_known);
  EXPECT_EQ(top_known, (std::vector<std::uint8_t>{1, 1}));
  std::vector<std::uint8_t> none(2, 0xaa), none_known(2, 0);
  FillUnfilledMappings({}, 0x1000, none, none_known);
  EXPECT_EQ(none_known, (std::vector<std::uint8_t>{0, 0}));
}

// A UCIR recording written by the recorder's writer and read back: the
// keyframe's mappings, then a system call that maps, protects and unmaps.
TEST(MappingTimeline, FollowsTheMappingsOfARecording) {
  const std::string path = (std::filesystem::path(::testing::TempDir()) /
                            ("mappings_test_" + std::to_string(::getpid()) + ".ucir"))
                               .string();
  {
    auto writer = CreateUsercornRecording(path);
    ASSERT_TRUE(writer.ok()) << writer.status().ToString();
    UsercornMapping text{0x400000, 0x2000,  kProtRead | kProtExec, 0x1000, 0x2000,
                         "/bin/p", "/bin/p"};
    UsercornMapping stack{0x7ff000, 0x1000, kProtRead | kProtWrite, 0, 0, "[stack]", ""};
    std::vector<UsercornMapping> initial{text, stack};
    ASSERT_TRUE(testing::BeginBareRecording(**writer, initial, 0x400000).ok());
    auto instruction = testing::BareInstruction;
    (*writer)->AppendInstruction(instruction(0x400000));
    const std::uint64_t args[6] = {};
    (*writer)->BeginSyscall(9, 0x600000, args);
    (*writer)->MemMap({0x600000, 0x3000, kProtRead | kProtWrite, 0, 0, "", ""});
    (*writer)->MemProt(0x601000, 0x1000, 0);
    (*writer)->MemUnmap(0x401000, 0x1000);
    (*writer)->EndSyscall();
    (*writer)->AppendInstruction(instruction(0x400002));
    (*writer)->AppendInstruction(instruction(0x400004));
    ASSERT_TRUE((*writer)->Finish().ok());
  }
  OpenOptions options;
  options.cache_dir = ::testing::TempDir();
  auto trace = Trace::Open(path, options);
  ASSERT_TRUE(trace.ok()) << trace.status().ToString();
  MappingTimeline timeline(*trace);
  const std::vector<Mapping> before{{0x400000, 0x2000, "r-x", 0x1000, "/bin/p"},
                                    {0x7ff000, 0x1000, "rw-", 0, "[stack]"}};
  const std::vector<Mapping> after{{0x400000, 0x1000, "r-x", 0x1000, "/bin/p"},
                                   {0x600000, 0x1000, "rw-", 0, ""},
                                   {0x601000, 0x1000, "---", 0, ""},
                                   {0x602000, 0x1000, "rw-", 0, ""},
                                   {0x7ff000, 0x1000, "rw-", 0, "[stack]"}};
  auto far = timeline.At(Position(3));
  ASSERT_TRUE(far.ok()) << far.status().ToString();
  EXPECT_EQ(*far, after);
  EXPECT_EQ(*timeline.At(Position(0)), before);  // back before the system call
  EXPECT_EQ(*timeline.At(Position(1)), after);
  EXPECT_TRUE(timeline.saw_changes());
  std::filesystem::remove(path);
  std::filesystem::remove(path + ".bsidx");  // the index beside it
}

}  // namespace
}  // namespace backstep::core
