// Naive searches over a TraceOracle: the reference for RunUntil and the
// access queries. Each walks positions one by one and applies search.h's
// rules literally (forward: the first s > from where event s-1 >= from made
// a watched access or pc(s) is a breakpoint; backward: the last s < from
// where event s made a watched access or pc(s) is a breakpoint; a watch wins
// a tie; the fence or the trace's ends otherwise).
//
// Physical traces: debugger (virtual) addresses go through
// TraceOracle::Translate(); the mapping must not change during the trace.
//
// Cost: linear in the trace. Thread-safety: as TraceOracle (const use).
#pragma once

#include <optional>
#include <vector>

#include "backstep/core/search.h"
#include "testing/trace_oracle.h"

namespace backstep::core::testing {

StopEvent NaiveRunUntil(const TraceOracle& oracle, std::uint64_t from, Direction direction,
                        const StopCondition& condition);

// Every access (reads first, then writes, per event) of events in
// [from, to) that overlaps the native byte range [lo, hi), in the same order
// and with the same deduplication as History().
std::vector<Access> NaiveAccesses(const TraceOracle& oracle, Address lo, Address hi,
                                  std::uint64_t from, std::uint64_t to, bool writes, bool reads);

// The native bytes of debugger range [address, address + length).
std::vector<Address> NativeBytes(const TraceOracle& oracle, Address address, std::uint64_t length);

}  // namespace backstep::core::testing
