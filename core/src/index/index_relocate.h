// RelocatePart: moves the body a part builder wrote (index_part_builder.h)
// to where it lands in the merged index file.
//
// A part writes absolute offsets of its own sink (first byte = 0) and its
// own thread indices. Before its bytes are appended at file offset `base`,
// every offset in them and in its tables gets `base` added, and every thread
// index is mapped to the merged index's. The walk reaches every offset the
// way a reader would: keyframes -> ref arrays -> register records (delta
// records' `prev`); segments -> pc records; segments -> page records ->
// block and snapshot records; threads' initial records. Ref arrays are
// re-sorted by the merged thread index (TraceIndex requires ref i to be
// thread i).
//
// Errors: Corruption when an offset or count points outside the part (the part
// was not written by BuildIndexPart).
//
// Thread-safety: pure function of its arguments.
#pragma once

#include <cstdint>
#include <span>

#include "backstep/core/status.h"
#include "index/index_part_builder.h"

namespace backstep::core {

// `body`: the part's bytes, patched in place. `thread_map[i]`: merged index
// of the part's thread i. Patches `tables` (keyframes, segments, threads'
// initial_record, register clears; runs keep part thread indices).
Status RelocatePart(std::span<std::uint8_t> body, std::uint64_t base,
                    std::span<const std::uint64_t> thread_map, IndexTables* tables);

}  // namespace backstep::core
