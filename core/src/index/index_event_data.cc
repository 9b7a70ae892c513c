// Event-referenced entries of TraceIndex (kEntryEvent, index-format.md
// "Referenced data"): a long write whose bytes the trace holds compressed
// (usercorn) is not copied into the index; its entry names the event, and
// the bytes are decoded again from the trace when a query needs them. One
// reader per index does it, positioned by the entry's ReaderPosition, and
// the last 4 writes decoded are kept: the reads of the pages of one large
// write (a mapped file) decode the event once. Memory: those writes'
// bytes, as large as the reader's own event buffers were for them.
#include <algorithm>
#include <cstring>
#include <mutex>

#include "index/trace_index.h"

namespace backstep::core {
namespace {

// What unreadable data reads as (EntryDecoder bounds lengths to a page).
constexpr std::uint8_t kZeros[kPageSize] = {};

}  // namespace

struct TraceIndex::EventDataCache {
  // The last kWrites writes decoded (a debugger alternates between a few
  // libraries' pages), most recent first.
  static constexpr std::size_t kWrites = 4;
  struct Write {
    EventDataRef source;
    std::vector<std::uint8_t> data;
  };
  ReaderFactory make_reader;
  std::mutex mutex;
  std::unique_ptr<TraceReader> reader;  // made on first use
  Event event;
  std::vector<Write> writes;

  // The write `s` names, decoded if it is not cached; null if it does not
  // decode. The identity check makes this the trace the index was built
  // from; a position or write that does not decode is a crafted index.
  const Write* Find(const EventDataRef& s) {
    auto same = [&](const Write& w) {
      return w.source.write_index == s.write_index && w.source.reader_offset == s.reader_offset &&
             w.source.reader_aux == s.reader_aux;
    };
    if (auto it = std::find_if(writes.begin(), writes.end(), same); it != writes.end()) {
      std::rotate(writes.begin(), it, it + 1);
      return &writes.front();
    }
    if (!reader) {
      Expected<std::unique_ptr<TraceReader>> r = make_reader();
      if (!r.ok()) return nullptr;
      reader = std::move(r).value();
    }
    if (!reader->Seek({s.reader_offset, s.reader_aux}).ok()) return nullptr;
    const Expected<bool> more = reader->Next(&event);
    if (!more.ok() || !*more || s.write_index >= event.writes.size()) return nullptr;
    const std::span<const std::uint8_t> bytes = event.writes[s.write_index].data;
    if (writes.size() == kWrites) writes.pop_back();
    writes.insert(writes.begin(), Write{s, {bytes.begin(), bytes.end()}});
    return &writes.front();
  }
};

void TraceIndex::set_reader_factory(ReaderFactory make_reader) {
  event_data_ = std::make_shared<EventDataCache>();
  event_data_->make_reader = std::move(make_reader);
}

void TraceIndex::EventData(const AccessEntry& e, std::uint8_t* out) const {
  std::memset(out, 0, e.length);
  if (!event_data_) return;
  std::lock_guard<std::mutex> lock(event_data_->mutex);
  const EventDataCache::Write* write = event_data_->Find(e.source);
  if (write && e.piece_offset <= write->data.size() &&
      e.length <= write->data.size() - e.piece_offset) {
    std::memcpy(out, write->data.data() + e.piece_offset, e.length);
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
  } else if (e.decoded) {
    // In the decoder, which the hit outlives.
    auto owned = std::make_shared<std::vector<std::uint8_t>>(e.data, e.data + e.length);
    hit.data = owned->data();
    hit.owned = std::move(owned);
  } else {
    std::vector<std::uint8_t> unused;
    hit.data = EntryData(e, unused);  // in the index, the trace or kZeros
  }
  return hit;
}

}  // namespace backstep::core
