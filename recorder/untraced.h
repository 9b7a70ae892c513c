// The side of a fork that is not recorded must run exactly as it would
// without the recorder: what the recorder set up in the recorded process
// (rdtsc faulting through PR_SET_TSC, CPUID faulting through
// ARCH_SET_CPUID, the single-step flag) is inherited by a child and kept
// across execve, so it is undone there before the process is detached (and
// set up in the child when the child is the one followed).
//
// The prctls run in the stopped process by re-executing the fork's own
// `syscall` instruction (Tracee::InjectSyscall): no memory is written,
// which matters for vfork and CLONE_VM children that share the parent's.
#pragma once

#include <sys/types.h>

#include <cstdint>

#include "backstep/core/expected.h"
#include "recorder/tracee.h"

namespace backstep::record {

// What the recorder set up in the process it records.
struct Traps {
  bool rdtsc = false;  // PR_SET_TSC, PR_TSC_SIGSEGV
  bool cpuid = false;  // ARCH_SET_CPUID 0 (--cpuid portable)
};

// Whether system call `nr` with `args` creates a process (fork, vfork,
// clone or clone3 without CLONE_THREAD) rather than a thread.
bool CreatesProcess(const Tracee& tracee, std::uint64_t nr, const std::uint64_t args[6]);

// Sets up (`on`) or undoes `traps` in thread `tid`, stopped at a signal or
// step stop, by running the prctls at `syscall_at`; its registers are kept.
core::Status SetTraps(Tracee& tracee, pid_t tid, core::Address syscall_at, Traps traps, bool on);

// SetTraps(..., false) and clears the single-step flag in its registers:
// `tid` may then be detached.
core::Status Untrace(Tracee& tracee, pid_t tid, core::Address syscall_at, Traps traps);

}  // namespace backstep::record
