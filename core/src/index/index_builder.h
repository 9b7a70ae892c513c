// BuildIndex: writes the index of a trace in one streaming pass.
//
// The builder reads every event once, in order, from a TraceReader at its
// first event, and writes the index file front to back through an IndexSink
// (core/doc/index-format.md has the layout):
//   * register records and keyframes every keyframe_interval events, written
//     as they come (a thread's registers are written again only after they
//     changed, as a delta from its previous record, fully every 16th time);
//   * segments: the pc index and the access lists (writes, reads, inferred
//     values) of a range of events, accumulated in memory and flushed when
//     they exceed `memory_budget`, which bounds the builder's memory;
//   * the directory (threads, runs, keyframes, clears, segments) and the
//     footer with the checksum.
//
// Memory: `memory_budget` for the segment being built, plus per thread one
// RegisterFile and the indices of its runs, 16 bytes per thread switch and
// 32 per keyframe, and for traces that record reads 520 bytes per touched
// page (inference_tracker.h).
//
// Thread-safety: one thread at a time; uses the reader exclusively.
#pragma once

#include <cstdint>
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
};

// Hash of the first and last 64 KiB of a trace file's bytes.
std::uint64_t TraceHash(std::span<const std::uint8_t> trace_bytes);

// Reads `reader` from its current position (its first event) to the end.
// Errors: the reader's (annotated with the event number), the sink's
// IOError, Interrupted when `progress` returns false.
Status BuildIndex(TraceReader& reader, const IndexIdentity& identity,
                  const IndexBuildOptions& options, IndexSink& sink);

}  // namespace backstep::core
