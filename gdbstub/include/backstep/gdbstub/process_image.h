// The process facts a debugger needs to load the right executable at the
// right address: the auxiliary vector (qXfer:auxv:read) and the
// executable's path (qXfer:exec-file:read).
//
// A usercorn trace (backstep record) starts right after exec: at position 0
// rsp points at argc, followed by argv[], NULL, envp[], NULL and the auxv as
// (type, value) u64 pairs up to AT_NULL. RecordedAuxv reads that block; a
// trace without it (REVEN, tfile: position 0 is not an exec) has none.
// SynthesizeAuxv builds one from the executable's ELF headers when the trace
// recorded none but the user named the executable (`serve --exe`).
//
// Thread-safety: free functions; each makes its own cursor.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "backstep/core/expected.h"
#include "backstep/core/trace.h"

namespace backstep::gdbstub {

// auxv entry types (<elf.h>), named here so callers need not include it.
inline constexpr std::uint64_t kAtNull = 0, kAtPhdr = 3, kAtPhent = 4, kAtPhnum = 5, kAtPagesz = 6,
                               kAtBase = 7, kAtEntry = 9, kAtExecfn = 31;

// The auxiliary vector on the initial stack of `trace` (raw bytes, AT_NULL
// pair included). NotFound when the trace does not start at an exec (only
// usercorn traces do), when rsp or any byte of argc..AT_NULL is unknown, or
// when the block is not a plausible vector (counts, terminators); the
// message names the reason and the address.
// `at`: the first position of an image (0, or right after an exec event:
// the new image's initial stack), where the same block is read.
core::Expected<std::vector<std::uint8_t>> RecordedAuxv(const core::Trace& trace,
                                                       core::Position at = core::Position{0});

// The argument and environment strings on the initial stack of `trace`
// (/proc/PID/cmdline and environ). NotFound as for RecordedAuxv, or when a
// pointer or string of them is unknown.
struct InitialStrings {
  std::vector<std::string> argv, envp;
};
core::Expected<InitialStrings> RecordedInitialStrings(const core::Trace& trace);

// The value of entry `type` in a raw auxv, if present.
std::optional<std::uint64_t> AuxvValue(const std::vector<std::uint8_t>& auxv, std::uint64_t type);

// The executable's path as recorded: the AT_EXECFN string in the initial
// memory, else the name of the initial mapping that holds AT_ENTRY (when it
// is an absolute path). Empty when neither is known.
std::string RecordedExecutablePath(const core::Trace& trace, const std::vector<std::uint8_t>& auxv);

// An auxv for the ELF executable at `elf_path` (x86-64 ELF64 only): AT_PHDR,
// AT_PHENT, AT_PHNUM, AT_PAGESZ (4096), AT_BASE, AT_ENTRY, AT_NULL. A PIE
// (ET_DYN) is placed where the trace's initial mappings put a file of the
// same name (the lowest mapping named like elf_path), else at 0; AT_BASE is
// the lowest mapping named like the PT_INTERP path, else 0. Errors name the
// file and the offending header field.
core::Expected<std::vector<std::uint8_t>> SynthesizeAuxv(const core::Trace& trace,
                                                         const std::string& elf_path);

}  // namespace backstep::gdbstub
