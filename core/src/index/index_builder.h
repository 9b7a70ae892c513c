// BuildIndex: writes the index of a trace, in one streaming pass or, when the
// reader has resume points (REVEN's trace.cache), in parallel parts.
//
// Single pass: the builder reads every event once, in order, from a
// TraceReader at its first event, and writes the index file front to back
// through an IndexSink (docs/formats/index-format.md has the layout):
//   * register records and keyframes every keyframe_interval events, written
//     as they come (a thread's registers are written again only after they
//     changed, as a delta from its previous record, fully every 16th time);
//   * segments: the pc index and the access lists (writes, reads, inferred
//     values) of a range of events, accumulated in memory and flushed when
//     they exceed `memory_budget`, which bounds the builder's memory;
//   * the directory (threads, runs, keyframes, clears, segments, the noted
//     events: those whose description DescribesNotes, with the text) and the
//     footer with the checksum.
//
// Memory: `memory_budget` for the segment being built, plus per thread one
// RegisterFile and the indices of its runs, 16 bytes per thread switch and
// 32 per keyframe, for traces that record reads 520 bytes per touched
// page (inference_tracker.h), and 32 bytes plus the description per noted
// event.
//
// Parallel (index_parallel.h): the events are split at resume points into
// one part per core, each indexed by its own reader on its own thread into a
// temporary part, then the parts are checked against each other at the
// seams, relocated and appended. Memory: the same budget, split between the
// parts; disk: the parts' unnamed temporary files beside the index (the
// index's size again, until the merge). The file means exactly what the single
// pass writes; when the parts cannot be proved to (a stale trace.cache, a
// trace that records reads), the single pass runs instead and
// IndexBuildReport::note says why.
//
// Thread-safety: one call at a time per reader and sink; uses the reader
// exclusively. `progress` is called from the calling thread only.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "backstep/core/progress.h"
#include "backstep/core/trace_reader.h"
#include "index/index_format.h"
#include "index/index_sink.h"

namespace backstep::core {

// What an index must match to be reused (stored in the header).
struct IndexIdentity {
  std::uint64_t trace_size = 0;
  std::int64_t trace_mtime_ns = 0;
  std::uint64_t trace_hash = 0;  // TraceHash()
  std::string format;
  std::uint64_t keyframe_interval = 2048;
  std::uint64_t arch_signature = 0;  // ArchSignature(arch)
};

// Hash of an architecture's register layout (name, register count, storage
// size): register records of another layout cannot be restored.
std::uint64_t ArchSignature(const ArchDescription& arch);

struct IndexBuildOptions {
  std::uint64_t memory_budget = std::uint64_t(256) << 20;
  std::uint32_t block_entries = kDefaultBlockEntries;
  std::uint32_t snapshot_blocks = kDefaultSnapshotBlocks;
  ProgressFn progress;
  // Parts of a parallel build: 0 = one per core
  // (std::thread::hardware_concurrency(), at most kMaxIndexParts), 1 = the
  // single pass. The parallel build also needs resume points and new_reader.
  unsigned parts = 0;
  // Makes another reader of the same trace, at its first event.
  std::function<Expected<std::unique_ptr<TraceReader>>()> new_reader;
  // When set, filled with how the index was built.
  struct IndexBuildReport* report = nullptr;
};

inline constexpr unsigned kMaxIndexParts = 8;

struct IndexBuildReport {
  unsigned parts = 1;  // 1: single pass
  // Why the single pass ran although parts != 1 was asked ("" otherwise).
  std::string note;
};

// Hash of the first and last 64 KiB of a trace file's bytes.
std::uint64_t TraceHash(std::span<const std::uint8_t> trace_bytes);

// Reads `reader` from its current position (its first event) to the end.
// Errors: the reader's (annotated with the event number), the sink's
// IOError, Interrupted when `progress` returns false.
Status BuildIndex(TraceReader& reader, const IndexIdentity& identity,
                  const IndexBuildOptions& options, IndexSink& sink);

// The header and the directory + footer of an index (both builds).
struct IndexTables;
void WriteIndexHeader(const IndexIdentity& identity, IndexSink& sink);
void WriteIndexDirectory(IndexTables& tables, const TraceHeader& trace,
                         const IndexBuildOptions& options, IndexSink& sink);

}  // namespace backstep::core
