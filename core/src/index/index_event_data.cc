// Event-referenced entries of TraceIndex (kEntryEvent, index-format.md
// "Referenced data"): a long write whose bytes the trace holds compressed
// (usercorn) is not copied into the index; its entry names the event, and
// the bytes are decoded again from the trace when a query needs them. One
// reader per index does it, positioned by the entry's ReaderPosition, and
// the last write decoded is kept: a page read, and the reads of the next
// pages of one large write (a mapped file), decode the event once.
#include <cstring>
#include <mutex>

#include "index/trace_index.h"

namespace backstep::core {
namespace {

// What unreadable data reads as (EntryDecoder bounds lengths to a page).
constexpr std::uint8_t kZeros[kPageSize] = {};

}  // namespace

struct TraceIndex::EventDataCache {
  ReaderFactory make_reader;
  std::mutex mutex;
  std::unique_ptr<TraceReader> reader;  // made on first use
  Event event;
  bool valid = false;
  EventDataRef source;             // of `data`, when valid
  std::vector<std::uint8_t> data;  // that write's bytes
};

void TraceIndex::set_reader_factory(ReaderFactory make_reader) {
  event_data_ = std::make_shared<EventDataCache>();
  event_data_->make_reader = std::move(make_reader);
}

void TraceIndex::EventData(const AccessEntry& e, std::uint8_t* out) const {
  std::memset(out, 0, e.length);
  if (!event_data_) return;
  EventDataCache& c = *event_data_;
  const EventDataRef& s = e.source;
  std::lock_guard<std::mutex> lock(c.mutex);
  if (!c.valid || c.source.write_index != s.write_index ||
      c.source.reader_offset != s.reader_offset || c.source.reader_aux != s.reader_aux) {
    // The identity check makes this the trace the index was built from; a
    // position or write that does not decode (a crafted index) reads as
    // zero.
    c.valid = false;
    c.data.clear();
    if (!c.reader) {
      Expected<std::unique_ptr<TraceReader>> reader = c.make_reader();
      if (!reader.ok()) return;
      c.reader = std::move(reader).value();
    }
    if (!c.reader->Seek({s.reader_offset, s.reader_aux}).ok()) return;
    const Expected<bool> more = c.reader->Next(&c.event);
    if (!more.ok() || !*more || s.write_index >= c.event.writes.size()) return;
    const std::span<const std::uint8_t> bytes = c.event.writes[s.write_index].data;
    c.data.assign(bytes.begin(), bytes.end());
    c.source = s;
    c.valid = true;
  }
  if (e.piece_offset <= c.data.size() && e.length <= c.data.size() - e.piece_offset) {
    std::memcpy(out, c.data.data() + e.piece_offset, e.length);
  }
}

const std::uint8_t* TraceIndex::EntryData(const AccessEntry& e,
                                          std::vector<std::uint8_t>& buffer) const {
  if (e.event_ref) {
    if (e.length == 0) return kZeros;
    buffer.resize(e.length);
    EventData(e, buffer.data());
    return buffer.data();
  }
  if (!e.ref) return e.data;
  // The identity check makes this the file the index was built from; stay
  // in bounds anyway.
  if (e.ref_offset > trace_bytes_.size() || e.length > trace_bytes_.size() - e.ref_offset) {
    return kZeros;
  }
  return trace_bytes_.data() + e.ref_offset;
}

AccessHit TraceIndex::Hit(const AccessEntry& e, std::uint64_t page) const {
  AccessHit hit{e, page, nullptr, nullptr};
  if (e.event_ref && e.length > 0) {
    auto owned = std::make_shared<std::vector<std::uint8_t>>();
    hit.data = EntryData(e, *owned);
    hit.owned = std::move(owned);
  } else {
    std::vector<std::uint8_t> unused;
    hit.data = EntryData(e, unused);  // in the index, the trace or kZeros
  }
  return hit;
}

}  // namespace backstep::core
