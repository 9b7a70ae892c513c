#include "protocol/gdb_signals.h"

#include <array>

namespace backstep::gdbstub {
namespace {

// Index: Linux signal 1..31; value: gdb's number (gdb/signals.def), 0: none.
constexpr std::array<std::uint8_t, 32> kGdbOfLinux = {
    0,
    1,   // SIGHUP
    2,   // SIGINT
    3,   // SIGQUIT
    4,   // SIGILL
    5,   // SIGTRAP
    6,   // SIGABRT
    10,  // SIGBUS
    8,   // SIGFPE
    9,   // SIGKILL
    30,  // SIGUSR1
    11,  // SIGSEGV
    31,  // SIGUSR2
    13,  // SIGPIPE
    14,  // SIGALRM
    15,  // SIGTERM
    0,   // SIGSTKFLT: gdb has none
    20,  // SIGCHLD
    19,  // SIGCONT
    17,  // SIGSTOP
    18,  // SIGTSTP
    21,  // SIGTTIN
    22,  // SIGTTOU
    16,  // SIGURG
    24,  // SIGXCPU
    25,  // SIGXFSZ
    26,  // SIGVTALRM
    27,  // SIGPROF
    28,  // SIGWINCH
    23,  // SIGIO
    32,  // SIGPWR
    12,  // SIGSYS
};

// Real-time signals: GDB_SIGNAL_REALTIME_32 is 77, _33.._63 are 45..75 and
// _64 is 78.
constexpr int kGdbRealtime32 = 77, kGdbRealtime33 = 45, kGdbRealtime64 = 78;

}  // namespace

std::optional<std::uint8_t> GdbSignalFromLinux(int linux_signal) {
  if (linux_signal >= 1 && linux_signal < 32) {
    const std::uint8_t gdb = kGdbOfLinux[static_cast<std::size_t>(linux_signal)];
    if (gdb == 0) return std::nullopt;
    return gdb;
  }
  if (linux_signal == 32) return kGdbRealtime32;
  if (linux_signal >= 33 && linux_signal <= 63) {
    return static_cast<std::uint8_t>(kGdbRealtime33 + (linux_signal - 33));
  }
  if (linux_signal == 64) return kGdbRealtime64;
  return std::nullopt;
}

std::optional<int> LinuxSignalFromGdb(std::uint8_t gdb_signal) {
  for (int linux_signal = 1; linux_signal <= 64; ++linux_signal) {
    if (GdbSignalFromLinux(linux_signal) == gdb_signal) return linux_signal;
  }
  return std::nullopt;
}

}  // namespace backstep::gdbstub
