// HideVdso: makes a program ignore the kernel's vDSO, so that its clock
// functions (clock_gettime, gettimeofday, time, getcpu) are real system
// calls instead of code that reads the kernel's [vvar] page, which changes
// behind the program's back and which the emu engine cannot emulate.
//
// glibc (ld.so for dynamic programs, the startup code of static ones) finds
// the vDSO through AT_SYSINFO_EHDR in the auxiliary vector on the initial
// stack, and falls back to the system calls without it. HideVdso, called at
// the exec stop before the first instruction, turns that entry into
// AT_IGNORE (the vDSO stays mapped, unused). /proc/PID/auxv keeps the
// kernel's copy, so `auxv` (read from there, for the trace) is patched the
// same way.
#pragma once

#include <cstdint>
#include <vector>

#include "backstep/core/expected.h"
#include "recorder/tracee.h"

namespace backstep::record {

// `rsp`: the stack pointer at the exec stop (argc, argv, envp, auxv).
// IOError when the stack cannot be read or written.
core::Status HideVdso(Tracee& tracee, std::uint64_t rsp, std::vector<std::uint8_t>* auxv);

}  // namespace backstep::record
