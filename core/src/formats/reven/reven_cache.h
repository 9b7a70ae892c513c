// REVEN's trace.cache (docs/formats/reven.md §1.4): resume points with full registers.
//
// Byte layout after the binresource metadata (resource type 2):
//   Header section       { u32 page_size }
//   Cache points section  opaque blob, addressed by offsets from its payload:
//                         at cpu_offset: u16 n ; n x { u16 id ; u16 size ; value[size] }
//                         at page_offset: page_size raw bytes
//   Index section        { u64 count ; count x { u64 context_id ;
//                          u64 trace_events_offset ; u64 cpu_offset ; u32 npages ;
//                          npages x { u64 page_physical_address ; u64 page_offset } } }
// Index entries are in strictly descending context_id order, ids >= 1.
// trace_events_offset is relative to the trace's events payload (so the
// first event is at 8, after event_count); it points at the event that
// turns context_id into context_id + 1.
//
// backstep uses only the registers and the event offsets: memory comes from
// replaying the trace's events (the index does that anyway), so the pages
// are validated (aligned, inside the blob) but never read. Rejected
// alternative: trusting pages as memory keyframes; they hold only the pages
// dirtied since the previous point, so using them needs every earlier
// point, and a stale cache would silently corrupt memory.
//
// A cache is advisory: RevenReader ignores one that fails validation and
// says why in the trace's properties.
//
// Thread-safety: RevenCache is immutable after Open().
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "backstep/core/byte_source.h"
#include "formats/reven/reven_container.h"
#include "formats/reven/reven_events.h"

namespace backstep::core {

class RevenCache {
 public:
  struct Point {
    std::uint64_t context_id = 0;
    std::uint64_t trace_events_offset = 0;  // from the events payload
    std::uint64_t cpu_offset = 0;           // from the cache points payload
  };

  // Parses and validates a cache against the trace it belongs to: the
  // decoder (register ids and sizes), the size of the trace's events
  // payload, and its event_count (0: unknown). Any error: Corruption or
  // Unsupported naming the cache file, section and offset.
  static Expected<std::unique_ptr<RevenCache>> Open(std::shared_ptr<const ByteSource> source,
                                                    const RevenEventDecoder& decoder,
                                                    std::uint64_t events_payload_size,
                                                    std::uint64_t event_count);

  std::uint32_t page_size() const { return page_size_; }
  // In increasing context_id order.
  const std::vector<Point>& points() const { return points_; }
  // The canonical register writes of a point (validated by Open()).
  Status DecodeRegisters(const Point& point, const RevenEventDecoder& decoder,
                         std::vector<RegisterWrite>* out) const;

 private:
  RevenCache() = default;
  Status ParseIndex(ByteReader index, const RevenEventDecoder& decoder,
                    std::uint64_t events_payload_size, std::uint64_t event_count);

  std::shared_ptr<const ByteSource> source_;
  ByteReader blob_;  // the cache points payload
  std::uint32_t page_size_ = 0;
  std::vector<Point> points_;
};

// --- writing caches (tests, the generator) ---

struct RevenCachePointData {
  std::uint64_t context_id = 0;
  std::uint64_t trace_events_offset = 0;
  // REVEN register id -> value (the declared size).
  std::vector<std::pair<std::uint16_t, std::vector<std::uint8_t>>> registers;
  // Page physical address -> page_size bytes.
  std::vector<std::pair<std::uint64_t, std::vector<std::uint8_t>>> pages;
};

// Encodes a whole cache file. Points may come in any order; the index is
// written in descending context_id order, the blob in ascending order.
// `md.resource_type` is forced to TraceCache.
Status AppendRevenCache(RevenMetadata md, std::uint32_t page_size,
                        const std::vector<RevenCachePointData>& points,
                        std::vector<std::uint8_t>* out);
// Same, written atomically to `path`.
Status WriteRevenCacheFile(const std::string& path, const RevenMetadata& md,
                           std::uint32_t page_size, const std::vector<RevenCachePointData>& points);

}  // namespace backstep::core
