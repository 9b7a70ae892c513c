// MappingNames (mapping_names.h) on hand-made calls: what each mapping call
// does to the named ranges, and how Rename() cuts the proxy's maps.
#include "recorder/native/mapping_names.h"

#include <gtest/gtest.h>
#include <sys/mman.h>
#include <sys/syscall.h>

#include <string>
#include <vector>

namespace backstep::record {
namespace {

constexpr std::uint64_t kPage = 4096;
constexpr std::uint64_t kBase = 0x7ffff7d00000;
using Named = MappingNames::NamedRange;

LoggedSyscall Call(std::uint64_t nr, std::uint64_t result, std::uint64_t rdi, std::uint64_t rsi,
                   std::uint64_t rdx = 0, std::uint64_t r10 = 0) {
  LoggedSyscall c;
  c.entry.orig_rax = nr;
  c.entry.rdi = rdi, c.entry.rsi = rsi, c.entry.rdx = rdx, c.entry.r10 = r10;
  c.exit.rax = result;
  return c;
}

// mmap of `pages` pages of `path` from `offset`, which returned `at`.
LoggedSyscall FileMmap(std::uint64_t at, std::uint64_t pages, const std::string& path,
                       std::uint64_t offset) {
  LoggedSyscall c = Call(SYS_mmap, at, 0, pages * kPage, PROT_READ, MAP_PRIVATE);
  c.mapped = LoggedFileMapping{path, offset, pages * kPage};
  return c;
}

TEST(MappingNames, FollowTheMappingCalls) {
  MappingNames names;
  names.Follow(FileMmap(kBase, 8, "/lib/libc.so.6", 0));
  // Unmapped in the middle: two ranges, the second from its own offset.
  names.Follow(Call(SYS_munmap, 0, kBase + 2 * kPage, 2 * kPage));
  EXPECT_EQ(
      names.ranges(),
      (std::vector<Named>{{kBase, kBase + 2 * kPage, "/lib/libc.so.6", 0},
                          {kBase + 4 * kPage, kBase + 8 * kPage, "/lib/libc.so.6", 4 * kPage}}));
  // mprotect names nothing; a failed munmap unmaps nothing.
  names.Follow(Call(SYS_mprotect, 0, kBase, kPage, PROT_READ | PROT_WRITE));
  names.Follow(Call(SYS_munmap, static_cast<std::uint64_t>(-22), kBase, 8 * kPage));
  EXPECT_EQ(names.ranges().size(), 2u);
  // Anonymous memory over the first page of the second range.
  names.Follow(Call(SYS_mmap, kBase + 4 * kPage, kBase + 4 * kPage, kPage, PROT_READ,
                    MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED));
  EXPECT_EQ(names.ranges()[1],
            (Named{kBase + 5 * kPage, kBase + 8 * kPage, "/lib/libc.so.6", 5 * kPage}));
  // Moved, shrunk to two pages (the third is gone).
  const std::uint64_t to = kBase + 64 * kPage;
  names.Follow(
      Call(SYS_mremap, to, kBase + 5 * kPage, 3 * kPage, 2 * kPage, MREMAP_MAYMOVE | MREMAP_FIXED));
  EXPECT_EQ(names.ranges(),
            (std::vector<Named>{{kBase, kBase + 2 * kPage, "/lib/libc.so.6", 0},
                                {to, to + 2 * kPage, "/lib/libc.so.6", 5 * kPage}}));
  // Grown in place: the file goes on.
  names.Follow(Call(SYS_mremap, to, to, 2 * kPage, 5 * kPage, 0));
  EXPECT_EQ(names.ranges()[1], (Named{to, to + 5 * kPage, "/lib/libc.so.6", 5 * kPage}));
  // MREMAP_DONTUNMAP leaves the old range named.
  const std::uint64_t copy = kBase + 128 * kPage;
  names.Follow(Call(SYS_mremap, copy, kBase, 2 * kPage, 2 * kPage,
                    MREMAP_MAYMOVE | MREMAP_FIXED | MREMAP_DONTUNMAP));
  EXPECT_EQ(names.ranges().size(), 3u);
  EXPECT_EQ(names.ranges()[2], (Named{copy, copy + 2 * kPage, "/lib/libc.so.6", 0}));
  // Another file over the end of one range and the start of the next.
  names.Follow(FileMmap(kBase + kPage, 64, "/lib/libm.so.6", 0x3000));
  EXPECT_EQ(names.ranges(),
            (std::vector<Named>{{kBase, kBase + kPage, "/lib/libc.so.6", 0},
                                {kBase + kPage, kBase + 65 * kPage, "/lib/libm.so.6", 0x3000},
                                {kBase + 65 * kPage, to + 5 * kPage, "/lib/libc.so.6", 6 * kPage},
                                {copy, copy + 2 * kPage, "/lib/libc.so.6", 0}}));
}

TEST(MappingNames, FollowSharedMemoryAttachments) {
  MappingNames names;
  const std::string segment = "/SYSV00000000 (deleted)";
  LoggedSyscall attach = Call(SYS_shmat, kBase, 0, 0);
  attach.mapped = LoggedFileMapping{segment, 0, 3 * kPage};
  names.Follow(attach);
  EXPECT_EQ(names.ranges(), (std::vector<Named>{{kBase, kBase + 3 * kPage, segment, 0}}));
  // A failed shmdt detaches nothing; a shmdt, what it detached.
  LoggedSyscall detach = Call(SYS_shmdt, static_cast<std::uint64_t>(-22), kBase, 0);
  names.Follow(detach);
  EXPECT_EQ(names.ranges().size(), 1u);
  detach = Call(SYS_shmdt, 0, kBase, 0);
  detach.mapped = attach.mapped;
  names.Follow(detach);
  EXPECT_TRUE(names.ranges().empty());
}

TEST(MappingNames, AfterReplaysTheLogsFirstCalls) {
  NativeLog log;
  log.syscalls.push_back(FileMmap(kBase, 4, "/a", 0));
  log.syscalls.push_back(Call(SYS_munmap, 0, kBase, 4 * kPage));
  EXPECT_EQ(MappingNames::After(log, 1).ranges().size(), 1u);
  EXPECT_TRUE(MappingNames::After(log, 2).ranges().empty());
  EXPECT_TRUE(MappingNames::After(log, 0).ranges().empty());
}

Mapping Map(std::uint64_t start, std::uint64_t pages, const std::string& name = "",
            bool write = false) {
  Mapping m;
  m.start = start;
  m.size = pages * kPage;
  m.read = true;
  m.write = write;
  m.name = name;
  return m;
}

TEST(MappingNames, RenameCutsTheProxysMappings) {
  MappingNames names;
  names.Follow(FileMmap(kBase + kPage, 2, "/lib/libc.so.6", 0x1000));
  names.Follow(FileMmap(kBase + 3 * kPage, 1, "/lib/libc.so.6", 0x5000));
  // The proxy merged the anonymous memory standing for both with its
  // neighbours; the executable's own mapping is left alone.
  std::vector<Mapping> maps = {Map(0x555555554000, 1, "/bin/prog"), Map(kBase, 5, "", true),
                               Map(kBase + 5 * kPage, 1, "[heap]")};
  names.Rename(&maps);
  ASSERT_EQ(maps.size(), 6u);
  EXPECT_EQ(maps[0].name, "/bin/prog");
  EXPECT_EQ(maps[1].name, "");
  EXPECT_EQ(maps[1].size, kPage);
  EXPECT_EQ(maps[2].start, kBase + kPage);
  EXPECT_EQ(maps[2].size, 2 * kPage);
  EXPECT_EQ(maps[2].name, "/lib/libc.so.6");
  EXPECT_EQ(maps[2].file_offset, 0x1000u);
  EXPECT_TRUE(maps[2].write);
  EXPECT_EQ(maps[3].start, kBase + 3 * kPage);
  EXPECT_EQ(maps[3].file_offset, 0x5000u);
  EXPECT_EQ(maps[4].start, kBase + 4 * kPage);
  EXPECT_EQ(maps[4].name, "");
  EXPECT_EQ(maps[5].name, "[heap]");
  // Nothing named: unchanged.
  std::vector<Mapping> plain = {Map(kBase, 5)};
  MappingNames().Rename(&plain);
  EXPECT_EQ(plain.size(), 1u);
}

}  // namespace
}  // namespace backstep::record
