#include "backstep/core/trace.h"

#include <algorithm>

#include "backstep/core/cursor.h"
#include "backstep/core/format_registry.h"
#include "backstep/core/mappings.h"
#include "index/index_store.h"
#include "replay/replay_cursor.h"
#include "replay/trace_index_of.h"

namespace backstep::core {

class TraceOpener {
 public:
  static Expected<std::shared_ptr<Trace>> Open(ReaderFactory make_reader, const std::string& path,
                                               const OpenOptions& options) {
    std::shared_ptr<Trace> trace(new Trace());
    trace->path_ = path;
    trace->make_reader_ = std::move(make_reader);
    BACKSTEP_ASSIGN_OR_RETURN(trace->reader_, trace->make_reader_());
    if (trace->reader_->header().arch == nullptr) {
      return Status::Unsupported(path + ": trace has no architecture");
    }
    // Building consumes a reader: give it a fresh one, keep reader_ intact.
    BACKSTEP_ASSIGN_OR_RETURN(std::unique_ptr<TraceReader> scan, trace->make_reader_());
    BACKSTEP_ASSIGN_OR_RETURN(
        OpenedIndex opened, OpenOrBuildIndex(*scan, trace->reader_->source().data(), path, options,
                                             trace->make_reader_));
    trace->index_ = std::move(opened.index);
    trace->index_status_ = std::move(opened.status);
    return trace;
  }
};

Expected<std::shared_ptr<Trace>> Trace::Open(const std::string& path, const OpenOptions& options) {
  BACKSTEP_ASSIGN_OR_RETURN(std::shared_ptr<const ByteSource> source, MapFile(path));
  // Queries read the trace at random (a 4 KiB read fetches bytes from up
  // to ~800 places): without this, each first touch of a page faults.
  if (options.map_in_cached_trace) source->MapInCachedPages();
  ReaderFactory factory = [source]() { return OpenTraceSource(source); };
  return TraceOpener::Open(std::move(factory), path, options);
}

Expected<std::shared_ptr<Trace>> Trace::OpenWith(ReaderFactory make_reader, const std::string& path,
                                                 const OpenOptions& options) {
  return TraceOpener::Open(std::move(make_reader), path, options);
}

Trace::~Trace() {
  // Pooled cursors refer to this trace: drop them before the index.
  pool_.clear();
  mappings_.reset();
}

const TraceIndex& TraceIndexOf(const Trace& trace) { return *trace.index_; }

const TraceHeader& Trace::header() const { return reader_->header(); }

std::uint64_t Trace::event_count() const { return index_->event_count(); }

std::vector<ThreadId> Trace::threads() const {
  std::vector<ThreadId> out;
  for (std::size_t i = 0; i < index_->thread_count(); ++i) {
    out.push_back(ThreadId(index_->thread(i).tid));
  }
  std::sort(out.begin(), out.end());
  return out;
}

Expected<std::unique_ptr<Cursor>> Trace::NewCursor() const {
  BACKSTEP_ASSIGN_OR_RETURN(std::unique_ptr<TraceReader> reader, make_reader_());
  auto cursor = std::make_unique<ReplayCursor>(*this, std::move(reader));
  BACKSTEP_RETURN_IF_ERROR(cursor->Init());
  return std::unique_ptr<Cursor>(std::move(cursor));
}

Expected<std::unique_ptr<TraceReader>> Trace::NewReader() const { return make_reader_(); }

Expected<std::unique_ptr<Cursor>> Trace::AcquireCursor() const {
  {
    std::lock_guard<std::mutex> lock(pool_mutex_);
    if (!pool_.empty()) {
      std::unique_ptr<Cursor> cursor = std::move(pool_.back());
      pool_.pop_back();
      return cursor;
    }
  }
  return NewCursor();
}

void Trace::ReleaseCursor(std::unique_ptr<Cursor> cursor) const {
  constexpr std::size_t kMaxIdle = 4;
  std::lock_guard<std::mutex> lock(pool_mutex_);
  if (cursor && pool_.size() < kMaxIdle) pool_.push_back(std::move(cursor));
}

const MappingTimeline& Trace::mappings() const {
  std::call_once(mappings_once_, [this] { mappings_ = std::make_unique<MappingTimeline>(*this); });
  return *mappings_;
}

const std::vector<NotedEvent>* Trace::noted_events() const {
  std::call_once(notes_once_, [this] {
    if (!index_->lists_notes()) return;
    std::vector<NotedEvent> notes;
    notes.reserve(index_->note_count());
    for (std::uint64_t i = 0; i < index_->note_count(); ++i) {
      const TraceIndex::Note note = index_->note(i);
      notes.push_back(
          {note.event, ThreadId(note.tid), static_cast<EventKind>(note.kind), note.description});
    }
    notes_ = std::move(notes);
  });
  return notes_ ? &*notes_ : nullptr;
}

std::optional<PlainSyscalls> Trace::plain_syscalls() const {
  if (!index_->lists_notes()) return std::nullopt;
  return index_->plain_syscalls();
}

void Trace::ReadInitialMemory(Address address, std::span<std::uint8_t> out,
                              std::span<std::uint8_t> known) const {
  std::lock_guard<std::mutex> lock(reader_mutex_);
  reader_->ReadInitialMemory(address, out, known);
}

}  // namespace backstep::core
