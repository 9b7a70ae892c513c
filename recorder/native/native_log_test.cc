// The native log's LoggedSyscall::mapped (native_log.h): a file mmap's and
// a SysV segment's (shmat, shmdt), written, read back, and refused where it
// cannot be or is missing; logs of the previous versions (BSNLOG01,
// BSNLOG02) are refused by name.
#include "recorder/native/native_log.h"

#include <gtest/gtest.h>
#include <sys/mman.h>
#include <sys/syscall.h>

#include <cstdio>
#include <fstream>
#include <iterator>
#include <string>

namespace backstep::record {
namespace {

std::string Bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

void Put(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes;
}

TEST(NativeLog, MappedFilesAreWrittenAndChecked) {
  const std::string path = ::testing::TempDir() + "/mapped.nlog";
  NativeLog log;
  log.argv = {"/bin/true"};
  LoggedSyscall& file = log.syscalls.emplace_back();
  file.entry.orig_rax = SYS_mmap;
  file.entry.rsi = 0x2000;
  file.entry.r10 = MAP_PRIVATE;
  file.exit.rax = 0x7ffff7d00000;
  file.mapped = LoggedFileMapping{"/usr/lib/x86_64-linux-gnu/libc.so.6", 0x28000, 0x2000};
  LoggedSyscall& attach = log.syscalls.emplace_back();
  attach.entry.orig_rax = SYS_shmat;
  attach.exit.rax = 0x7ffff7ff0000;
  attach.mapped = LoggedFileMapping{"/SYSV00000000 (deleted)", 0, 0x3000};
  LoggedSyscall& detach = log.syscalls.emplace_back();
  detach.entry.orig_rax = SYS_shmdt;
  detach.entry.rdi = 0x7ffff7ff0000;
  detach.mapped = LoggedFileMapping{"/SYSV00000000 (deleted)", 0, 0x3000};
  LoggedSyscall& other = log.syscalls.emplace_back();
  other.entry.orig_rax = SYS_getpid;
  other.exit.rax = 2;
  ASSERT_TRUE(WriteNativeLog(log, path).ok());
  core::Expected<NativeLog> read = ReadNativeLog(path);
  ASSERT_TRUE(read.ok()) << read.status().message();
  for (std::size_t i = 0; i < 3; ++i) {
    ASSERT_TRUE(read->syscalls[i].mapped.has_value()) << i;
    EXPECT_EQ(*read->syscalls[i].mapped, *log.syscalls[i].mapped) << i;
  }
  EXPECT_FALSE(read->syscalls[3].mapped.has_value());
  auto expect_damage = [&](const char* what, const char* message) {
    ASSERT_TRUE(WriteNativeLog(log, path).ok());
    read = ReadNativeLog(path);
    ASSERT_FALSE(read.ok()) << what;
    EXPECT_NE(read.status().message().find(message), std::string::npos)
        << what << ": " << read.status().message();
  };
  // A file for a call that is no mmap or shmat/shmdt is damage; so is an
  // mmap's size that is not its length, and a shmat without its segment.
  log.syscalls[3].mapped = LoggedFileMapping{"/x", 0, 0x1000};
  expect_damage("getpid with a file", "bad mapped file at offset");
  log.syscalls[3].mapped.reset();
  log.syscalls[0].mapped->size = 0x1000;
  expect_damage("mmap of another size", "bad mapped file at offset");
  log.syscalls[0].mapped->size = 0x2000;
  log.syscalls[1].mapped.reset();
  expect_damage("shmat without its segment", "shmat or shmdt without its segment at offset");
  // The previous versions' logs are refused by name.
  log.syscalls.resize(1);
  ASSERT_TRUE(WriteNativeLog(log, path).ok());
  const std::string bytes = Bytes(path);
  ASSERT_EQ(bytes.substr(0, 8), "BSNLOG03");
  for (const char* older : {"BSNLOG01", "BSNLOG02"}) {
    Put(path, older + bytes.substr(8));
    read = ReadNativeLog(path);
    ASSERT_FALSE(read.ok()) << older;
    EXPECT_NE(read.status().message().find(std::string("an older version's log (") + older),
              std::string::npos)
        << read.status().message();
  }
  std::remove(path.c_str());
}

}  // namespace
}  // namespace backstep::record
