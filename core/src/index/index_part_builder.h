// BuildIndexPart: indexes one stretch of events [first_event, stop_event) of
// a trace into an IndexSink, and returns the tables of the directory in
// memory (IndexTables) instead of writing them.
//
// This is the index builder's event loop (index_builder.h). The single-pass
// build runs one part over the whole trace straight into the index file
// (after the header); the parallel build (docs/formats/index-format.md, "Parallel
// build") runs one part per stretch between resume points, each into its own
// PartSink, and merges them.
//
// A part writes, front to back: one full register record per seeded thread,
// then register records and keyframe ref arrays (at events that are
// multiples of the keyframe interval) interleaved with segments. Every file
// offset it writes or returns is an offset in its own sink, every event
// number is global. Thread indices are the part's own (seeded threads first,
// in seed order, then threads in order of first appearance).
//
// Thread-safety: a part uses its reader and sink exclusively; several parts
// of one trace may run on different threads.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "backstep/core/register_file.h"
#include "backstep/core/trace_reader.h"
#include "index/index_format.h"
#include "index/index_sink.h"
#include "index/inference_tracker.h"
#include "index/plain_syscall_writer.h"

namespace backstep::core {

// What the directory of an index holds, in memory (offsets of the sink the
// tables were built with).
struct IndexTables {
  struct Thread {
    ThreadId tid;
    RegisterFile regs;  // the thread's registers at the end of the part
    ThreadRecord out{};
    std::vector<std::uint64_t> runs;  // indices into `runs`
  };
  std::vector<Thread> threads;
  std::vector<RunRecord> runs;
  std::vector<KeyframeRecord> keyframes;
  std::vector<std::uint64_t> memory_clears;
  std::vector<RegisterClearRecord> register_clears;
  std::vector<SegmentRecord> segments;
  // The noted events (DescribesNotes) in event order; text_offset is into
  // note_text.
  std::vector<NoteRecord> notes;
  std::string note_text;
  // The plain system calls (PlainSyscallNumber), not among `notes`.
  PlainSyscallWriter plain_syscalls;
  std::uint64_t end_event = 0;  // events indexed: the part covers [first, end_event)
  ReaderPosition end_position;  // the reader's Tell() at end_event
  bool records_reads = false;
  // For traces that record reads, parts that stop before the end: the bytes
  // written or read since the part's last memory clear, or its start (plus, for a part seeded with
  // the initial state, the image's bytes of the pages touched). The parallel build's inference
  // merge (index_inference_merge.h) needs them.
  KnownPages known_at_end;
};

struct IndexPartPlan {
  std::uint64_t first_event = 0;        // global number of the reader's next event
  std::uint64_t stop_event = kNoEvent;  // stop before this event (kNoEvent: the end)
  // Registers of the threads known at first_event, in order.
  std::vector<std::pair<ThreadId, RegisterFile>> seed;
  // The seed is position 0's (ThreadRecord::initial_record and flags 1).
  // Otherwise value inference ignores the initial image (a clear may come
  // before the part) and treats every byte as unknown at first_event: the
  // inference merge removes what an earlier part knew.
  bool seed_is_initial = true;
  std::uint64_t keyframe_interval = 2048;
  std::uint64_t memory_budget = std::uint64_t(256) << 20;
  std::uint32_t block_entries = kDefaultBlockEntries;
  std::uint32_t snapshot_blocks = kDefaultSnapshotBlocks;
  // Written pieces that are not in the trace file reference their event
  // (kEntryEvent) when they are long: set when the index's user can open
  // readers to decode them again (IndexBuildOptions::new_reader).
  bool event_refs = false;
  // Called every 2^16 events with the global number of events done;
  // returning false cancels the part (Interrupted).
  std::function<bool(std::uint64_t events_done)> progress;
};

// Reads `reader` from its current position (event plan.first_event) until
// plan.stop_event or the end. Errors: the reader's (annotated with the event
// number), the sink's IOError, Interrupted.
Status BuildIndexPart(TraceReader& reader, const IndexPartPlan& plan, IndexSink& sink,
                      IndexTables* out);

}  // namespace backstep::core
