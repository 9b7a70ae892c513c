// The children of a program `backstep record --engine native` records
// (native_recorder.h): fork/vfork children are not recorded, but they
// inherit the seccomp filter that makes each system call a ptrace stop,
// which cannot be removed (without a tracer their system calls would fail
// with ENOSYS). So they stay attached, with their own children, and the
// recorder serves their stops as the kernel would without it: resumed at
// each system call, event and the stop a new child starts with; their own
// signals delivered; the rdtsc and cpuid faults they inherit (PR_SET_TSC,
// CPUID faulting) answered with the CPU's values. Nothing of them is logged.
//
// Thread-safety: called by the recorder's thread (their tracer).
#pragma once

#include <sys/types.h>

namespace backstep::record {

// Resumes `child`, which waitpid reported with `status` (nothing if it
// ended); at its fork, vfork or clone event, the new child's pid (attached
// too), else 0.
pid_t ServeUnrecordedChild(pid_t child, int status);

}  // namespace backstep::record
