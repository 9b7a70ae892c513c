// Trace: an opened trace file with its persistent index.
//
// Opening a trace sniffs its format, then opens the index next to the trace
// (`<trace>.bsidx`) or in the cache directory when the trace's directory is
// read-only. An index is reused when the trace's size, mtime and header hash
// match; otherwise, or when it is corrupt or truncated, it is rebuilt in one
// streaming pass (with progress) and written atomically. See
// core/doc/index-format.md for the layout.
//
// A Trace is shared by any number of Cursors (one per debugger client).
//
// Thread-safety: const methods may be called from several threads; each
// Cursor is used by one thread at a time.
#pragma once

#include <functional>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <vector>

#include "backstep/core/expected.h"
#include "backstep/core/progress.h"
#include "backstep/core/trace_reader.h"
#include "backstep/core/types.h"

namespace backstep::core {

class Cursor;
class TraceIndex;

struct OpenOptions {
  // Where to put the index when the trace's directory is not writable.
  // Empty: $XDG_CACHE_HOME/backstep or ~/.cache/backstep.
  std::string cache_dir;
  // Events between register keyframes (0 = default, 2048). Changing it rebuilds.
  std::uint64_t keyframe_interval = 0;
  // Build the index if it is missing or stale (false: fail instead).
  bool build_index = true;
  ProgressFn progress;
  // Index builder tuning (0 = default; see core/doc/index-format.md). The
  // builder flushes a segment when its buffers exceed the budget (default
  // 256 MiB); tests use tiny values to exercise segments and snapshots.
  // Changing the block sizes does not rebuild an existing index.
  std::uint64_t index_memory_budget = 0;
  std::uint32_t index_block_entries = 0;    // access-list entries per block (64)
  std::uint32_t index_snapshot_blocks = 0;  // blocks between page snapshots (128)
  // Parts of a parallel index build from the reader's resume points (REVEN's
  // trace.cache): 0 = one per core, 1 = always the single pass. The index
  // means the same either way (core/doc/index-format.md).
  unsigned index_parts = 0;
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

class Trace {
 public:
  static Expected<std::shared_ptr<Trace>> Open(const std::string& path,
                                               const OpenOptions& options = {});
  // Opens a trace whose readers come from `make_reader` (in-memory traces,
  // tests). `path` is the trace file the index is located and identified by;
  // empty: the index is built in memory and not saved.
  static Expected<std::shared_ptr<Trace>> OpenWith(ReaderFactory make_reader,
                                                   const std::string& path,
                                                   const OpenOptions& options = {});
  ~Trace();

  const std::string& path() const { return path_; }
  const TraceHeader& header() const;
  const ArchDescription& arch() const { return *header().arch; }
  // Events in the trace; positions are 0..event_count().
  std::uint64_t event_count() const;
  // Every thread that executes at least one event or has initial registers.
  std::vector<ThreadId> threads() const;
  const IndexStatus& index_status() const { return index_status_; }
  const TraceIndex& index() const { return *index_; }

  // A new cursor at position 0, with its own reader. The Trace must outlive
  // its cursors.
  Expected<std::unique_ptr<Cursor>> NewCursor() const;
  // A new reader of the same file (for streaming consumers: convert, export).
  Expected<std::unique_ptr<TraceReader>> NewReader() const;
  // A cursor from a small pool of idle ones (or a new one), for searches
  // that need the state at a position (page walks of physical traces);
  // give it back with ReleaseCursor(). Saves opening a reader per search.
  // Thread-safe.
  Expected<std::unique_ptr<Cursor>> AcquireCursor() const;
  void ReleaseCursor(std::unique_ptr<Cursor> cursor) const;
  // The initial memory image (TraceReader::ReadInitialMemory), in the
  // trace's address space. Thread-safe (serialized).
  void ReadInitialMemory(Address address, std::span<std::uint8_t> out,
                         std::span<std::uint8_t> known) const;

 private:
  Trace() = default;
  std::string path_;
  ReaderFactory make_reader_;
  mutable std::mutex reader_mutex_;      // guards reader_'s initial-memory reads
  std::unique_ptr<TraceReader> reader_;  // for header() and initial memory
  mutable std::mutex pool_mutex_;
  mutable std::vector<std::unique_ptr<Cursor>> pool_;  // idle cursors
  std::unique_ptr<TraceIndex> index_;
  IndexStatus index_status_;
  friend class TraceOpener;
};

}  // namespace backstep::core
