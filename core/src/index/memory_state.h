// ReadNativeMemory: the memory of a trace at a position, in the trace's own
// address space, assembled from the index.
//
// For each byte, in order of precedence:
//   1. the last write by an event in [c, p), c = the last memory clear
//      before p (the clearing event's own writes come after its clear);
//   2. with no clear before p, the initial image;
//   3. for traces that record reads, value inference: the first read of the
//      byte in its clear epoch (c, next clear at or after p], when no write
//      came first (inference_tracker.h explains why that suffices).
// Bytes that none of these give are unknown.
//
// Cost per page touched: a few binary searches, one snapshot copy and the
// decode of at most snapshot_blocks * block_entries write entries per index
// segment, plus one image read. No allocation.
//
// Thread-safety: as TraceIndex (const) and `image`.
#pragma once

#include <cstdint>
#include <functional>
#include <span>

#include "index/trace_index.h"

namespace backstep::core {

// Reads the initial image (TraceReader::ReadInitialMemory's contract).
using ImageReadFn =
    std::function<void(Address, std::span<std::uint8_t> out, std::span<std::uint8_t> known)>;

// Fills out/known for [address, address + out.size()) at position p.
// REQUIRES: out.size() == known.size(), p <= index.event_count().
void ReadNativeMemory(const TraceIndex& index, const ImageReadFn& image, std::uint64_t p,
                      Address address, std::span<std::uint8_t> out, std::span<std::uint8_t> known);

}  // namespace backstep::core
