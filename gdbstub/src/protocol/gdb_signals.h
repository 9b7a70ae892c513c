// gdb's remote protocol numbers signals its own way (gdb's enum gdb_signal:
// SIGUSR1 is 30 there, 10 on Linux); stop replies (`T1e`), QPassSignals and
// `C` packets from gdb use gdb's numbers. LLDB uses the target's (Linux's).
//
// Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <optional>

namespace backstep::gdbstub {

// gdb's number for Linux signal `linux_signal` (1..64); nullopt for a signal
// gdb has no number for (SIGSTKFLT) or out of range.
std::optional<std::uint8_t> GdbSignalFromLinux(int linux_signal);
// The inverse; nullopt for gdb signals Linux does not have.
std::optional<int> LinuxSignalFromGdb(std::uint8_t gdb_signal);

}  // namespace backstep::gdbstub
