// BuildIndexInParallel: the parallel index build (index_builder.h).
//
// Part 0 runs on `reader` from its first event to the first split; part k
// runs on a reader from options.new_reader, Seek()ed to split k-1's reader
// position and seeded with its registers, to the next split (the last part
// to the end). Each part has its own thread, its own PartSink (made by
// sink.NewPartSink()) and memory_budget / parts of memory. The calling
// thread reports the summed progress and cancels every part when `progress`
// returns false.
//
// Then, before anything is written to `sink`, each seam is checked: part
// k-1 must have stopped exactly at split k-1's event and reader position,
// knowing exactly the threads split k-1 names, with equal registers. Only
// then is a part's work what the single pass would have done from there.
// When a seam does not hold (a stale trace.cache), a part other than the
// first fails (perhaps because of a bad resume point), or the parts cannot
// be set up, `reader` is put back at its first event, *written is false and
// report->note says why: the caller runs the single pass. Otherwise the
// header, every part (relocated, index_relocate.h; for traces that record
// reads followed by the inferred lists the inference merge rewrote,
// index_inference_merge.h) and the merged directory are written to `sink`
// and *written is true.
//
// Errors (with *written true): part 0's reader error, Interrupted, the
// sink's IOError.
//
// Thread-safety: as BuildIndex.
#pragma once

#include <vector>

#include "index/index_builder.h"

namespace backstep::core {

Status BuildIndexInParallel(TraceReader& reader, const IndexIdentity& identity,
                            const IndexBuildOptions& options, std::vector<ResumePoint> splits,
                            IndexSink& sink, IndexBuildReport* report, bool* written);

}  // namespace backstep::core
