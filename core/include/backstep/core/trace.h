// Trace: an opened trace file with its persistent index.
//
// Opening a trace sniffs its format, then opens the index next to the trace
// (`<trace>.bsidx`) or in the cache directory when the trace's directory is
// read-only. An index is reused when the trace's size, mtime and header hash
// match; otherwise, or when it is corrupt or truncated, it is rebuilt in one
// streaming pass (with progress) and written atomically. See
// docs/formats/index-format.md for the layout.
//
// A Trace is shared by any number of Cursors (one per debugger client).
//
// Thread-safety: const methods may be called from several threads; each
// Cursor is used by one thread at a time.
#pragma once

#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "backstep/core/event_notes.h"
#include "backstep/core/expected.h"
#include "backstep/core/open_options.h"
#include "backstep/core/plain_syscalls.h"
#include "backstep/core/progress.h"
#include "backstep/core/trace_reader.h"
#include "backstep/core/types.h"

namespace backstep::core {

class Cursor;
class MappingTimeline;
class TraceIndex;

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
  // The process's mappings at every position (backstep/core/mappings.h),
  // one timeline per trace, made by the first call: the cursors, the gdb
  // stub and the queries share it (it reads noted_events(), or decodes
  // the events once when the index has no such list). Thread-safe.
  const MappingTimeline& mappings() const;
  // The events whose descriptions carry event notes or mapping changes
  // (backstep/core/event_notes.h: DescribesNotes), in trace order, as the
  // index lists them, except the plain system calls (plain_syscalls()): the
  // mapping timeline and the gdb stub's stops read these instead of
  // decoding the trace. nullptr when the index does not
  // list them (an index without the list; then those consumers decode every
  // event once). Made by the first call from the mapped index (no decoding);
  // thread-safe.
  const std::vector<NotedEvent>* noted_events() const;
  // The plain system calls (backstep/core/plain_syscalls.h), which the
  // index lists apart from noted_events(); nullopt exactly when
  // noted_events() is nullptr. A view of the mapped index; thread-safe.
  std::optional<PlainSyscalls> plain_syscalls() const;

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
  mutable std::once_flag mappings_once_;
  mutable std::unique_ptr<MappingTimeline> mappings_;
  mutable std::once_flag notes_once_;
  mutable std::optional<std::vector<NotedEvent>> notes_;
  friend class TraceOpener;
  // The index, for core's own modules (replay/trace_index_of.h); front ends
  // use the queries of trace_query.h.
  friend const TraceIndex& TraceIndexOf(const Trace& trace);
};

}  // namespace backstep::core
