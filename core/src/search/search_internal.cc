#include "search/search_internal.h"

#include <algorithm>
#include <cstring>
#include <iterator>

#include "backstep/core/hex.h"
#include "index/memory_state.h"

namespace backstep::core {

Status CheckRange(const Trace& trace, Address address, std::uint64_t length) {
  const unsigned bits = trace.arch().pointer_size() * 8u;
  // The last address a range may reach (exclusive end): 2^bits, and for
  // 64-bit spaces 2^64 - 1, so that address + length never wraps.
  const std::uint64_t space_end = bits >= 64 ? ~std::uint64_t(0) : (std::uint64_t(1) << bits);
  if (address > space_end || length > space_end - address) {
    return Status::InvalidArgument("range " + HexU64(address) + " + " + HexU64(length) +
                                   " goes past the end of the " + std::to_string(bits) +
                                   "-bit address space");
  }
  return Status();
}

Expected<std::vector<NativeRange>> NativeRanges(const Trace& trace, Address address,
                                                std::uint64_t length, AddressKind kind,
                                                Position at) {
  BACKSTEP_RETURN_IF_ERROR(CheckRange(trace, address, length));
  const TraceIndex& index = TraceIndexOf(trace);
  const bool physical = index.physical();
  if (!physical && kind == AddressKind::kPhysical) {
    return Status::Unsupported(trace.path() + ": physical addresses in a trace of virtual ones");
  }
  std::vector<NativeRange> out;
  if (length == 0) return out;
  if (physical && kind == AddressKind::kVirtual) {
    // Each page is walked through the page tables: bound the walk.
    if (length > kMaxTranslatedRange) {
      return Status::InvalidArgument(
          trace.path() + ": a virtual range of a trace of physical addresses is translated page " +
          "by page; at most " + HexU64(kMaxTranslatedRange) + " bytes (asked " + HexU64(length) +
          ")");
    }
    BACKSTEP_ASSIGN_OR_RETURN(std::unique_ptr<Cursor> cursor, trace.AcquireCursor());
    Status moved = cursor->Seek(at);
    // NOTE: Trace's cursors are always ReplayCursors.
    auto ranges = moved.ok()
                      ? static_cast<const ReplayCursor&>(*cursor).TranslateRange(address, length)
                      : Expected<std::vector<NativeRange>>(moved);
    trace.ReleaseCursor(std::move(cursor));
    return ranges;
  }
  // Only pages the index lists can hold an answer: the cost follows the
  // trace, not the length asked (a swapped ADDR and LEN must stay cheap).
  const Address last = address + (length - 1);  // CheckRange: no wrap
  std::vector<std::uint64_t> pages =
      index.ListedPages(kWriteList, address >> kPageBits, last >> kPageBits);
  if (index.records_reads()) {
    const std::vector<std::uint64_t> read_pages =
        index.ListedPages(kReadList, address >> kPageBits, last >> kPageBits);
    std::vector<std::uint64_t> both;
    std::set_union(pages.begin(), pages.end(), read_pages.begin(), read_pages.end(),
                   std::back_inserter(both));
    pages = std::move(both);
  }
  out.reserve(pages.size());
  for (const std::uint64_t page : pages) {
    const Address lo = std::max(address, page << kPageBits);
    const Address hi = std::min(last, (page << kPageBits) + (kPageSize - 1)) + 1;
    out.push_back({lo, hi, lo});
  }
  return out;
}

Access GatherAccess(const Trace& trace, AccessListKind list, const AccessHit& hit,
                    const NativeRange& range) {
  const TraceIndex& index = TraceIndexOf(trace);
  AccessEntry e = hit.entry;
  if (e.access_length > index.max_access_length()) {
    e.piece_offset = 0;  // a crafted length: report the piece alone
    e.access_length = e.length;
  }
  Access a;
  a.event = e.event;
  a.thread = ThreadAround(index, e.event);
  a.is_write = list == kWriteList;
  const Address start = hit.address() - e.piece_offset;
  a.address = range.debugger + (start - range.lo);
  a.data.assign(e.access_length, 0);
  if (!a.is_write && !trace.header().read_values) {
    // The trace holds no read values: a read sees the memory of its position.
    std::vector<std::uint8_t> known(e.access_length);
    const ImageReadFn image = [&trace](Address at, std::span<std::uint8_t> out,
                                       std::span<std::uint8_t> k) {
      trace.ReadInitialMemory(at, out, k);
    };
    ReadNativeMemory(index, image, e.event, start, a.data, known);
    return a;
  }
  std::memcpy(a.data.data() + e.piece_offset, hit.data, e.length);
  if (e.access_length == e.length) return a;
  for (Address page_start = start & ~(kPageSize - 1); page_start < start + e.access_length;
       page_start += kPageSize) {
    const std::uint64_t piece = std::max(page_start, start) - start;
    if (piece == e.piece_offset) continue;
    auto other = index.FindPiece(list, page_start >> kPageBits, e.event, piece);
    if (other && piece + other->entry.length <= a.data.size()) {
      std::memcpy(a.data.data() + piece, other->data, other->entry.length);
    }
  }
  return a;
}

ThreadId ThreadAround(const TraceIndex& index, std::uint64_t event) {
  const std::uint64_t n = index.event_count();
  if (n == 0) return index.thread_count() ? ThreadId(index.thread(0).tid) : ThreadId();
  return ThreadId(index.thread(index.ThreadIndexAt(std::min(event, n - 1))).tid);
}

ChangeDetector::ChangeDetector(const Trace& trace) : trace_(trace) {}

bool ChangeDetector::Changes(std::uint64_t w, const std::vector<NativeRange>& ranges) {
  const TraceIndex& index = TraceIndexOf(trace_);
  const ImageReadFn image = [this](Address a, std::span<std::uint8_t> out,
                                   std::span<std::uint8_t> known) {
    trace_.ReadInitialMemory(a, out, known);
  };
  for (const NativeRange& r : ranges) {
    const std::size_t n = r.hi - r.lo;
    before_.resize(n), before_known_.resize(n), after_.resize(n), after_known_.resize(n);
    // Bytes written by w with their new values: writes of events in [w, w+1).
    std::fill(after_known_.begin(), after_known_.end(), 0);
    index.WriteState(r.lo, r.hi, w, w + 1, after_.data(), after_known_.data());
    if (std::none_of(after_known_.begin(), after_known_.end(), [](auto k) { return k != 0; })) {
      continue;
    }
    ReadNativeMemory(index, image, w, r.lo, before_, before_known_);
    for (std::size_t i = 0; i < n; ++i) {
      if (after_known_[i] && (!before_known_[i] || before_[i] != after_[i])) return true;
    }
  }
  return false;
}

}  // namespace backstep::core
