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

#include <cstddef>
#include <cstdint>
#include <span>
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

// Calls fn(offset, length) for each run of `contents` that holds non-zero
// bytes, runs being split at 64 zero bytes or more: what a new mapping's
// contents need in a trace, where a fresh mapping reads as zeros.
template <typename Fn>
void ForEachNonZeroRun(std::span<const std::uint8_t> contents, Fn fn) {
  std::size_t i = 0;
  while (i < contents.size()) {
    while (i < contents.size() && contents[i] == 0) ++i;
    std::size_t j = i, zeros = 0;
    while (j < contents.size() && zeros < 64) zeros = contents[j++] == 0 ? zeros + 1 : 0;
    const std::size_t end = j - zeros;
    if (end > i) fn(i, end - i);
    i = j;
  }
}

}  // namespace backstep::record
