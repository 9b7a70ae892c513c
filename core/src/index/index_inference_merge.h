// InferenceMerge: value inference across the parts of a parallel index build
// (index_parallel.h), so that the merged index answers exactly as the single
// pass for traces that record reads.
//
// The single pass keeps, per byte and memory-clear epoch, the first read of
// the byte when no write or read of it came earlier in the epoch (the
// inferred list, inference_tracker.h). A part that does not start the trace
// cannot know what came before it: it treats every byte as unknown at its
// start (not even the initial image counts, a clear may precede it), so its
// inferred list holds a superset of the single pass's entries for the events
// before its first clear. Exactly those entries whose bytes an earlier part
// already knew in the same epoch are extra; after the part's first clear the
// part knew everything the single pass knew.
//
// The merge walks the parts in order, keeping the bytes known in the current
// epoch at the end of the parts merged so far (each part's
// IndexTables::known_at_end, or'ed in, or replacing the set when the part
// cleared memory). For part k it rewrites the inferred list of every segment
// that holds entries up to the part's first clear: bytes known at the part's
// start (in the set, or in the initial image while no clear came yet) are cut
// out of the entries, the rest is encoded again exactly as the single pass
// would have (same runs, same trace references). A rewritten list is appended
// to the index after the part (its old bytes stay in the part's body,
// unreferenced) and the segment record points to it; lists with nothing to
// cut are left as they are. With the set, a later read of a byte extends its
// value back to the last write in an earlier part, or to the trace's start,
// through the earliest inferred entry, as in the single pass.
//
// Memory: the known set (520 bytes per page touched since the last clear,
// as the single pass's tracker) plus one segment's inferred list while it
// is rewritten. Disk: the rewritten lists (for x64dbg traces, whose every
// part starts with all memory unknown, most inferred entries of parts after
// the first are rewritten once).
//
// Thread-safety: one thread at a time.
#pragma once

#include <cstdint>
#include <span>

#include "backstep/core/status.h"
#include "backstep/core/trace_reader.h"
#include "index/index_part_builder.h"
#include "index/index_sink.h"

namespace backstep::core {

class InferenceMerge {
 public:
  InferenceMerge(const TraceReader& reader, std::uint32_t block_entries,
                 std::uint32_t snapshot_blocks)
      : reader_(reader), block_entries_(block_entries), snapshot_blocks_(snapshot_blocks) {}

  // Part k of the trace, in order (k = 0 first). `body`: the part's bytes,
  // already relocated to file offset `base` (RelocatePart) and appended to
  // `sink`. Rewrites what it must (appending to `sink` and patching
  // tables->segments), then takes tables->known_at_end.
  // Errors: Corruption when a list points outside `body`; the sink's.
  Status AddPart(std::span<const std::uint8_t> body, std::uint64_t base, IndexTables* tables,
                 IndexSink& sink);

 private:
  Status RewriteList(std::span<const std::uint8_t> body, std::uint64_t base,
                     std::uint64_t last_event, SegmentRecord* segment, IndexSink& sink);

  const TraceReader& reader_;
  std::uint32_t block_entries_, snapshot_blocks_;
  bool first_part_ = true;
  bool cleared_ = false;  // a memory clear came before the next part
  KnownPages known_;
};

}  // namespace backstep::core
