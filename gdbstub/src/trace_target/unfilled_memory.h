// Memory of mappings made during the run whose zero fill the trace does not
// carry (core::Mapping::unfilled: a usercorn MEM_MAP over 1 MiB, such as
// every 8 MiB thread stack). The format says a new mapping is zero-filled,
// so a byte of such a mapping that no event wrote since is zero; the reader
// leaves it unknown only because a fill would copy the whole mapping into
// the index.
//
// Why the stub must answer those bytes: LLDB reads memory in aligned
// 512-byte blocks (its memory cache) and gives up on the whole block when
// the reply is empty, with no smaller retry; a block that starts below the
// deepest write of a thread stack would otherwise fail and take the known
// variables above it along (`frame variable`, `bt` in a second thread),
// where gdb, which reads just the variable, shows them.
//
// Thread-safety: pure function.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "backstep/core/mappings.h"

namespace backstep::gdbstub {

// For each byte of [addr, addr + out.size()) with known[i] == 0 that lies in
// an unfilled mapping of `maps` (sorted, as MappingTimeline::At gives them):
// out[i] = 0 and known[i] = 1. REQUIRES: out.size() == known.size().
void FillUnfilledMappings(const std::vector<core::Mapping>& maps, core::Address addr,
                          std::span<std::uint8_t> out, std::span<std::uint8_t> known);

}  // namespace backstep::gdbstub
