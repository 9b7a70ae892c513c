// Probes shared by the reader fuzzers: exercise a reader's random-access
// paths (initial memory at the edges of the address space and of every
// region) so that out-of-bounds arithmetic shows up under ASan.
#pragma once

#include <cstdint>
#include <vector>

#include "backstep/core/trace_reader.h"

namespace backstep::core::testing {

inline void ProbeInitialMemory(const TraceReader& reader) {
  std::vector<std::uint8_t> out(64), known(64);
  reader.ReadInitialMemory(0, out, known);
  reader.ReadInitialMemory(~Address{0} - 31, out, known);
  for (const auto& region : reader.header().regions) {
    reader.ReadInitialMemory(region.start - 32, out, known);
    reader.ReadInitialMemory(region.start + region.size - 32, out, known);
  }
}

}  // namespace backstep::core::testing
