// The native log's LoggedSyscall::mapped (native_log.h): written, read
// back, and refused where it cannot be; logs of the previous versions
// (BSNLOG01, BSNLOG02) are refused by name.
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
  file.mapped = LoggedFileMapping{"/usr/lib/x86_64-linux-gnu/libc.so.6", 0x28000};
  LoggedSyscall& other = log.syscalls.emplace_back();
  other.entry.orig_rax = SYS_getpid;
  other.exit.rax = 2;
  ASSERT_TRUE(WriteNativeLog(log, path).ok());
  core::Expected<NativeLog> read = ReadNativeLog(path);
  ASSERT_TRUE(read.ok()) << read.status().message();
  ASSERT_TRUE(read->syscalls[0].mapped.has_value());
  EXPECT_EQ(*read->syscalls[0].mapped, *log.syscalls[0].mapped);
  EXPECT_FALSE(read->syscalls[1].mapped.has_value());
  // A file for a call that is no mmap is damage.
  log.syscalls[1].mapped = LoggedFileMapping{"/x", 0};
  ASSERT_TRUE(WriteNativeLog(log, path).ok());
  read = ReadNativeLog(path);
  ASSERT_FALSE(read.ok());
  EXPECT_NE(read.status().message().find("bad mapped file at offset"), std::string::npos)
      << read.status().message();
  // The previous versions' logs are refused by name (BSNLOG02 has this
  // layout: only the magic tells it).
  log.syscalls.pop_back();
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
