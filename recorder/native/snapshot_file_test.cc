// The snapshot file (snapshot_file.h): what WriteSnapshot writes
// ReadSnapshot reads back equal; a truncated or damaged file is refused
// with an error naming it and the offset, never read as something else.
#include "recorder/native/snapshot_file.h"

#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>

namespace backstep::record {
namespace {

Snapshot Example() {
  Snapshot s;
  s.syscall = 7;
  s.rdtsc = 2;
  s.regs.rip = 0x401000;
  s.regs.rsp = 0x7ffffff0;
  s.xstate.assign(832, 0x11);
  s.sigmask = 1u << 9;
  s.signals.actions[10].fill(0x22);
  s.signals.actions[11].fill(0x33);
  s.signals.altstack.assign(24, 0x44);
  s.mappings = {{0x400000, 0x2000, 5}, {0x7ffff000, 0x1000, 3}};
  s.memory.push_back({0x400000, std::vector<std::uint8_t>(48, 0x90)});
  s.memory.push_back({0x7ffff800, std::vector<std::uint8_t>(16, 1)});
  return s;
}

std::string TempPath(const std::string& name) {
  return (std::filesystem::path(::testing::TempDir()) / name).string();
}

std::vector<std::uint8_t> FileBytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

TEST(SnapshotFile, ReadsBackWhatItWrote) {
  const std::string path = TempPath("roundtrip.snap");
  const Snapshot s = Example();
  ASSERT_TRUE(WriteSnapshot(s, path).ok());
  auto read = ReadSnapshot(path);
  ASSERT_TRUE(read.ok()) << read.status().ToString();
  EXPECT_EQ(read->syscall, 7u);
  EXPECT_EQ(read->rdtsc, 2u);
  EXPECT_EQ(std::memcmp(&read->regs, &s.regs, sizeof s.regs), 0);
  EXPECT_EQ(read->xstate, s.xstate);
  EXPECT_EQ(read->sigmask, s.sigmask);
  EXPECT_EQ(read->signals.actions, s.signals.actions);
  EXPECT_EQ(read->signals.altstack, s.signals.altstack);
  ASSERT_EQ(read->mappings.size(), 2u);
  EXPECT_EQ(read->mappings[1].start, 0x7ffff000u);
  EXPECT_EQ(read->mappings[1].prot, 3);
  ASSERT_EQ(read->memory.size(), 2u);
  EXPECT_EQ(read->memory[0].address, 0x400000u);
  EXPECT_EQ(read->memory[0].bytes, s.memory[0].bytes);
  std::filesystem::remove(path);
}

TEST(SnapshotFile, EveryTruncationIsAnErrorNamingTheFile) {
  const std::string path = TempPath("truncated.snap");
  ASSERT_TRUE(WriteSnapshot(Example(), path).ok());
  const std::vector<std::uint8_t> bytes = FileBytes(path);
  for (std::size_t n = 0; n < bytes.size(); ++n) {
    auto read = ParseSnapshot(std::span(bytes.data(), n), "x.snap");
    ASSERT_FALSE(read.ok()) << n;
    EXPECT_NE(read.status().message().find("snapshot x.snap"), std::string::npos)
        << read.status().ToString();
  }
  std::filesystem::remove(path);
}

TEST(SnapshotFile, DamageIsRefused) {
  const std::string path = TempPath("damaged.snap");
  ASSERT_TRUE(WriteSnapshot(Example(), path).ok());
  const std::vector<std::uint8_t> good = FileBytes(path);
  std::filesystem::remove(path);
  auto refused = [&](std::vector<std::uint8_t> bytes, const std::string& why) {
    auto read = ParseSnapshot(bytes, "x.snap");
    ASSERT_FALSE(read.ok()) << why;
    EXPECT_NE(read.status().ToString().find(why), std::string::npos) << read.status().ToString();
  };
  std::vector<std::uint8_t> bytes = good;
  bytes[0] = 'X';
  refused(bytes, "bad magic");
  bytes = good;
  bytes.push_back(0);
  refused(bytes, "trailing bytes");
  // The first action's signal number (after magic, two counters, the
  // registers, the XSAVE image and its length, the mask and the count).
  const std::size_t signal_at = 8 + 16 + sizeof(user_regs_struct) + 8 + 832 + 8 + 8;
  bytes = good;
  bytes[signal_at] = 65;
  refused(bytes, "bad signal 65");
  // A mapping that wraps around the address space.
  Snapshot wraps = Example();
  wraps.mappings[0] = {0xfffffffffffff000, 0x2000, 3};
  ASSERT_TRUE(WriteSnapshot(wraps, path).ok());
  refused(FileBytes(path), "bad mapping");
  Snapshot run_wraps = Example();
  run_wraps.memory[0].address = 0xfffffffffffffff0;
  ASSERT_TRUE(WriteSnapshot(run_wraps, path).ok());
  refused(FileBytes(path), "bad memory run");
  std::filesystem::remove(path);
}

}  // namespace
}  // namespace backstep::record
