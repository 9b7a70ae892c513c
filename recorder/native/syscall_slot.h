// The pieces of a patched system call site (syscall_buffer.h): which bytes
// after its `syscall` a patch may cover and how they run elsewhere
// (RelocateAfterSyscall), and the trampoline slot the patch jumps to
// (BuildSlot; its layout: syscall_stub.h).
//
// Thread-safety: plain functions.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <utility>
#include <vector>

#include "recorder/native/syscall_stub.h"

namespace backstep::record {

// What follows a site's `syscall` that a patch may cover (the 5-byte jump
// needs 5 bytes from the `syscall` on), as the slot runs it: cmp/test of
// rax, short conditional jumps (made near), ret; after a ret, 2 bytes of
// the padding compilers put between functions (never run). Jumps into the
// covered bytes are assumed not to exist (rr assumes it of the same
// sequences).
struct Relocation {
  std::uint64_t length = 0;  // bytes patched from the `syscall` on
  std::vector<std::uint8_t> code;
  std::vector<std::pair<std::size_t, std::uint64_t>> targets;  // rel32 at code offset -> address
  bool returns = false;                                        // ends with ret: no jump back
};

// `b`: 16 bytes at `site`, a `syscall`. nullopt when what follows is not
// one of the forms above.
std::optional<Relocation> RelocateAfterSyscall(const std::uint8_t* b, std::uint64_t site);

// The trampoline slot at `slot` for the site at `site`, in the process whose
// core region is at `core`.
std::array<std::uint8_t, stub::kSlotSize> BuildSlot(std::uint64_t core, std::uint64_t slot,
                                                    std::uint64_t site, const Relocation& after);

}  // namespace backstep::record
