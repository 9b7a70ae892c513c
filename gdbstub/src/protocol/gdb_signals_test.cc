#include "protocol/gdb_signals.h"

#include <gtest/gtest.h>
#include <signal.h>

namespace backstep::gdbstub {
namespace {

TEST(GdbSignalsTest, LinuxNumbersToGdbs) {
  // gdb/signals.def: the numbers gdb prints as these names.
  EXPECT_EQ(GdbSignalFromLinux(SIGHUP), 1);
  EXPECT_EQ(GdbSignalFromLinux(SIGBUS), 10);
  EXPECT_EQ(GdbSignalFromLinux(SIGUSR1), 30);
  EXPECT_EQ(GdbSignalFromLinux(SIGSEGV), 11);
  EXPECT_EQ(GdbSignalFromLinux(SIGUSR2), 31);
  EXPECT_EQ(GdbSignalFromLinux(SIGCHLD), 20);
  EXPECT_EQ(GdbSignalFromLinux(SIGTSTP), 18);
  EXPECT_EQ(GdbSignalFromLinux(SIGIO), 23);
  EXPECT_EQ(GdbSignalFromLinux(SIGSYS), 12);
  EXPECT_EQ(GdbSignalFromLinux(32), 77);
  EXPECT_EQ(GdbSignalFromLinux(33), 45);
  EXPECT_EQ(GdbSignalFromLinux(63), 75);
  EXPECT_EQ(GdbSignalFromLinux(64), 78);
  EXPECT_EQ(GdbSignalFromLinux(SIGSTKFLT), std::nullopt);
  EXPECT_EQ(GdbSignalFromLinux(0), std::nullopt);
  EXPECT_EQ(GdbSignalFromLinux(65), std::nullopt);
}

TEST(GdbSignalsTest, RoundTrip) {
  for (int s = 1; s <= 64; ++s) {
    if (const auto gdb = GdbSignalFromLinux(s)) {
      EXPECT_EQ(LinuxSignalFromGdb(*gdb), s) << s;
    }
  }
  EXPECT_EQ(LinuxSignalFromGdb(0), std::nullopt);
  EXPECT_EQ(LinuxSignalFromGdb(7), std::nullopt);  // SIGEMT: none on Linux
}

}  // namespace
}  // namespace backstep::gdbstub
