// How much of an exhaustive sweep a test visits.
//
// The damage sweeps (a reader reloaded at every truncation length, or with
// every byte flipped) and the replay cross-checks are the slowest tests of
// the sanitizer build, and only slow there (Debug, ASan+UBSan: 20-30x the
// normal build). Under BACKSTEP_SANITIZED_BUILD, which CMake defines on the
// test binaries of that build only, a sweep visits every kSweepStride-th
// case (or a larger odd stride for the largest sweeps); the normal build
// visits every case. An odd stride still lands at every offset within 2-, 4-
// and 8-byte fields.
//
// Include it from test sources only: the constant differs between builds.
#pragma once

#include <cstddef>

namespace backstep::core::testing {

// `sanitized` under the sanitizers, 1 otherwise: a sweep's step.
constexpr std::size_t SweepStride(std::size_t sanitized) {
#ifdef BACKSTEP_SANITIZED_BUILD
  return sanitized;
#else
  (void)sanitized;
  return 1;
#endif
}

constexpr std::size_t kSweepStride = SweepStride(5);

}  // namespace backstep::core::testing
