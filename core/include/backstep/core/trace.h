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

#include <memory>
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
  // Events between register keyframes (0 = default). Changing it rebuilds.
  std::uint64_t keyframe_interval = 0;
  // Build the index if it is missing or stale (false: fail instead).
  bool build_index = true;
  ProgressFn progress;
};

struct IndexStatus {
  std::string path;         // where the index file is
  bool reused = false;      // true if an existing index was valid
  std::string rebuilt_why;  // why it was (re)built: "missing", "stale: mtime changed", ...
  std::uint64_t size_bytes = 0;
};

class Trace {
 public:
  static Expected<std::shared_ptr<Trace>> Open(const std::string& path,
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

  // A new cursor at position 0.
  Expected<std::unique_ptr<Cursor>> NewCursor() const;
  // A new reader of the same file (for streaming consumers: convert, export).
  Expected<std::unique_ptr<TraceReader>> NewReader() const;

 private:
  Trace() = default;
  std::string path_;
  std::unique_ptr<TraceReader> reader_;  // for header() and initial memory
  std::unique_ptr<TraceIndex> index_;
  IndexStatus index_status_;
  friend class TraceOpener;
};

}  // namespace backstep::core
