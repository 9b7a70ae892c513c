// The file of a native recording's snapshot (snapshot.h): what a snapshot
// holds, written and read. Apart from the rest of the snapshot code (which
// needs a tracee) so that the reader builds into its fuzzer
// (fuzz/native_snapshot_fuzzer.cc).
//
// File format (little-endian, written atomically): "BSNSNP01", the system
// call index, the rdtsc count, user_regs_struct, the XSAVE image, the
// mask, the dispositions (u64 signal, 32 bytes), the alternate stack
// (24 bytes, empty when none), the mappings (start, size, protection) and
// the runs (address, bytes), arrays prefixed by a u64 count.
//
// Thread-safety: plain functions.
#pragma once

#include <sys/user.h>

#include <array>
#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <vector>

#include "backstep/core/expected.h"
#include "recorder/native/native_log.h"

namespace backstep::record {

// The kernel's struct sigaction (handler, flags, restorer, mask).
using KernelSigaction = std::array<std::uint8_t, 32>;

// What the program set up that lives in the kernel and no register or
// memory shows (native_recorder.h tracks it from the calls it logs).
struct SignalSetup {
  std::map<int, KernelSigaction> actions;  // signals whose disposition was set
  std::vector<std::uint8_t> altstack;      // stack_t (24 bytes), empty when never set
};

struct SnapshotMapping {
  std::uint64_t start = 0, size = 0;
  std::uint8_t prot = 0;  // PROT_READ | PROT_WRITE | PROT_EXEC
};

struct Snapshot {
  std::uint64_t syscall = 0;  // the log's system calls before it
  std::uint64_t rdtsc = 0;    // the log's rdtsc values before it
  user_regs_struct regs{};
  std::vector<std::uint8_t> xstate;  // NT_X86_XSTATE
  std::uint64_t sigmask = 0;
  SignalSetup signals;
  std::vector<SnapshotMapping> mappings;
  std::vector<LoggedWrite> memory;  // non-zero runs of the readable mappings
};

core::Status WriteSnapshot(const Snapshot& snapshot, const std::string& path);
core::Expected<Snapshot> ReadSnapshot(const std::string& path);
// The snapshot in `data`, a file at `path` (its name in errors): what
// ReadSnapshot does after reading the file.
core::Expected<Snapshot> ParseSnapshot(std::span<const std::uint8_t> data, const std::string& path);

}  // namespace backstep::record
