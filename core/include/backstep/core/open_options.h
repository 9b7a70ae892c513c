// OpenOptions, IndexStatus and ReaderFactory: how a trace and its index are
// opened (Trace::Open, trace.h) and what the index store reports back.
//
// Its own header so that the index (core/src/index) can take the options
// without depending on the replay layer's Trace.
//
// Thread-safety: plain values.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "backstep/core/expected.h"
#include "backstep/core/progress.h"
#include "backstep/core/trace_reader.h"

namespace backstep::core {

struct OpenOptions {
  // Where to put the index when the trace's directory is not writable.
  // Empty: $XDG_CACHE_HOME/backstep or ~/.cache/backstep.
  std::string cache_dir;
  // Events between register keyframes (0 = default, 2048). Changing it rebuilds.
  std::uint64_t keyframe_interval = 0;
  // Build the index if it is missing or stale (false: fail instead).
  bool build_index = true;
  // Build a new index even if a valid one exists (`index --force`); the old
  // one stays in place until the new one is complete and replaces it.
  bool rebuild_index = false;
  ProgressFn progress;
  // Index builder tuning (0 = default; see docs/formats/index-format.md). The
  // builder flushes a segment when its buffers exceed the budget (default
  // 256 MiB); tests use tiny values to exercise segments and snapshots.
  // Changing the block sizes does not rebuild an existing index.
  std::uint64_t index_memory_budget = 0;
  std::uint32_t index_block_entries = 0;    // access-list entries per block (64)
  std::uint32_t index_snapshot_blocks = 0;  // blocks between page snapshots (128)
  // Parts of a parallel index build from the reader's resume points (REVEN's
  // trace.cache): 0 = one per core, 1 = always the single pass. The index
  // means the same either way (docs/formats/index-format.md).
  unsigned index_parts = 0;
  // Map in the trace's pages that the page cache already holds, at open
  // (ByteSource::MapInCachedPages), for sessions that read the trace at
  // random for long (serve, the LLDB plugin): their reads then take no page
  // fault. A one-shot command would pay ~20-30 ms per cached GiB for nothing.
  bool map_in_cached_trace = false;
};

// Makes a new reader of the trace, positioned at its first event.
using ReaderFactory = std::function<Expected<std::unique_ptr<TraceReader>>()>;

struct IndexStatus {
  std::string path;         // where the index file is
  bool reused = false;      // true if an existing index was valid
  std::string rebuilt_why;  // why it was (re)built: "missing", "stale: mtime changed", ...
  std::uint64_t size_bytes = 0;
  // When built: parts of the build (1: single pass), and why a parallel
  // build fell back to the single pass ("" if it did not).
  unsigned build_parts = 0;
  std::string build_note;
};

}  // namespace backstep::core
