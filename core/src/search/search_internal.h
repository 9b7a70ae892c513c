// Helpers shared by RunUntil (search.cc) and the access queries
// (access_queries.cc): translating debugger ranges to the trace's address
// space, reassembling accesses split at page boundaries, and state
// comparisons for the only_changes filter.
//
// Thread-safety: reentrant (const Trace, const TraceIndex).
#pragma once

#include <cstdint>
#include <vector>

#include "backstep/core/search.h"
#include "backstep/core/trace.h"
#include "index/trace_index.h"
#include "replay/replay_cursor.h"
#include "replay/trace_index_of.h"

namespace backstep::core {

// Native per-page pieces of [address, address + length) of `kind`, at
// position `at` (physical traces translate virtual ranges there).
Expected<std::vector<NativeRange>> NativeRanges(const Trace& trace, Address address,
                                                std::uint64_t length, AddressKind kind,
                                                Position at);

// The whole access that `hit` is a piece of, with its address mapped into the
// debugger's space through `range` (the piece of the request it was found in).
Access GatherAccess(const Trace& trace, AccessListKind list, const AccessHit& hit,
                    const NativeRange& range);

// Thread of event `event` (or of the last event at the end; ThreadId() for an
// empty trace).
ThreadId ThreadAround(const TraceIndex& index, std::uint64_t event);

// True if event w changes a byte of `ranges`: a byte that w writes whose
// value before w is unknown or differs from its value after w. Scratch
// buffers are reused between calls.
class ChangeDetector {
 public:
  explicit ChangeDetector(const Trace& trace);
  bool Changes(std::uint64_t w, const std::vector<NativeRange>& ranges);

 private:
  const Trace& trace_;
  std::vector<std::uint8_t> before_, before_known_, after_, after_known_;
};

}  // namespace backstep::core
