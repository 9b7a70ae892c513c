// WithResumePoints: gives the readers of any trace resume points (as REVEN's
// trace.cache gives RevenReader), so that the parallel index build can be
// tested on traces REVEN cannot express: several threads, register and
// memory clears.
//
// The points are computed once by a naive replay of a reader from `inner`:
// at each of `positions` (events before the point), the reader position and
// the registers of every thread known so far (initial registers, then every
// thread that executed an event), with register clears and writes applied
// in the documented order. `tamper` may change them afterwards (a stale
// cache).
//
// Thread-safety: the factory may be called from several threads; each
// reader is used by one thread at a time.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "backstep/core/trace.h"
#include "backstep/core/trace_reader.h"

namespace backstep::core::testing {

Expected<ReaderFactory> WithResumePoints(
    ReaderFactory inner, const std::vector<std::uint64_t>& positions,
    const std::function<void(std::vector<ResumePoint>&)>& tamper = {});

}  // namespace backstep::core::testing
