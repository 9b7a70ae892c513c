// Snapshots of a natively recorded process (native_recorder.h), taken at a
// system call's exit stop, from which materialization (materialize.h)
// re-executes the interval that follows independently of the ones before.
//
// A snapshot is a dump, not a checkpoint process: every register (GPRs and
// the XSAVE image), the signal mask, the dispositions and alternate stack
// the program set (tracked from its rt_sigaction and sigaltstack calls),
// the mappings (ranges and protections) and the contents of every readable
// mapping but [vdso], [vvar] and [vsyscall] (non-zero runs; the rest is
// zeros). Its size is the program's resident image, written to its own file
// next to the log as it is taken (nothing accumulates in memory).
//
// RestoreSnapshot() turns the emu engine's proxy process, stopped at exec,
// into the snapshot: it replays the log's mapping calls before the
// snapshot (mmap, munmap, mprotect, brk, mremap: the same kernel state,
// heap end included), grows the stack, sets the dispositions, alternate
// stack and mask, checks that the mappings now cover the snapshot's with
// the same protections, and writes every mapping's contents and every
// register.
//
// File format (little-endian, written atomically): "BSNSNP01", the system
// call index, the rdtsc count, user_regs_struct, the XSAVE image, the
// mask, the dispositions (u64 signal, 32 bytes), the alternate stack
// (24 bytes, empty when none), the mappings (start, size, protection) and
// the runs (address, bytes), arrays prefixed by a u64 count.
//
// Thread-safety: plain functions over one tracee.
#pragma once

#include <sys/user.h>

#include <array>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "backstep/core/expected.h"
#include "recorder/native/native_log.h"
#include "recorder/tracee.h"

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

// The process `tracee` (stopped at a system call's exit stop) now.
core::Expected<Snapshot> TakeSnapshot(const Tracee& tracee, const SignalSetup& signals);

core::Status WriteSnapshot(const Snapshot& snapshot, const std::string& path);
core::Expected<Snapshot> ReadSnapshot(const std::string& path);

// Makes `proxy` (the emu engine's, stopped at exec of the same program) the
// snapshot's process; `log` holds the system calls before it. An error says
// which replayed call or mapping differs.
core::Status RestoreSnapshot(Tracee& proxy, const NativeLog& log, const Snapshot& snapshot);

// The arguments that run logged mmap `entry` (which returned `result`) in a
// process that lacks the file: anonymous memory at the same address.
void MmapArgumentsWithoutFile(std::uint64_t result, user_regs_struct* entry);

}  // namespace backstep::record
