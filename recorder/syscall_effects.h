// What a Linux x86-64 system call writes into the caller's memory.
//
// KnownOutputs() lists, for the system calls the recorder knows, the
// buffers the kernel may have filled (from the arguments and the result).
// For every other system call it returns false, and the recorder diffs all
// writable memory instead: knowledge only makes recording faster, never
// less complete.
//
// Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <vector>

#include "recorder/insn_decoder.h"

namespace backstep::record {

// Syscall numbers the recorder treats specially.
inline constexpr std::uint64_t kSysMmap = 9, kSysMprotect = 10, kSysMunmap = 11, kSysBrk = 12,
                               kSysMremap = 25, kSysMadvise = 28, kSysExit = 60,
                               kSysExitGroup = 231, kSysRseq = 334;

// Appends the output buffers of syscall `nr` to *out; false when unknown.
bool KnownOutputs(std::uint64_t nr, const std::uint64_t args[6], std::uint64_t result,
                  std::vector<Range>* out);

// The mappings may change: re-read /proc/PID/maps after it.
bool ChangesMappings(std::uint64_t nr);

}  // namespace backstep::record
