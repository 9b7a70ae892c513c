// LastWrite / NextWrite / LastRead / NextRead / History: the access lists
// of the index, per page of the asked range, merged.
#include <algorithm>
#include <tuple>

#include "search/search_internal.h"

namespace backstep::core {
namespace {

Status CheckReads(const Trace& trace) {
  if (TraceIndexOf(trace).records_reads()) return Status();
  return Status::InvalidArgument(trace.path() + ": the trace records no memory reads");
}

Expected<std::optional<Access>> Nearest(const Trace& trace, AccessListKind list, Address address,
                                        std::uint64_t length, Position at, AddressKind kind,
                                        bool forward) {
  if (at.value > trace.event_count()) {
    return Status::OutOfRange("position " + std::to_string(at.value) + " past the end (" +
                              std::to_string(trace.event_count()) + ")");
  }
  BACKSTEP_ASSIGN_OR_RETURN(std::vector<NativeRange> ranges,
                            NativeRanges(trace, address, length, kind, at));
  std::optional<AccessHit> best;
  const NativeRange* best_range = nullptr;
  for (const NativeRange& r : ranges) {
    BACKSTEP_ASSIGN_OR_RETURN(
        std::optional<AccessHit> hit,
        forward ? TraceIndexOf(trace).NextAccess(list, r.lo, r.hi, at.value, nullptr)
                : TraceIndexOf(trace).PrevAccess(list, r.lo, r.hi, at.value, nullptr));
    if (hit && (!best || (forward ? hit->entry.event < best->entry.event
                                  : hit->entry.event > best->entry.event))) {
      best = hit;
      best_range = &r;
    }
  }
  if (!best) return std::optional<Access>();
  return std::optional<Access>(GatherAccess(trace, list, *best, *best_range));
}

// Appends up to `max` accesses of `list` in [from, to) overlapping `r`.
void Collect(const Trace& trace, AccessListKind list, const NativeRange& r, std::uint64_t from,
             std::uint64_t to, std::size_t max, std::vector<Access>& out) {
  std::size_t n = 0;
  TraceIndexOf(trace).ScanAccesses(list, r.lo, r.hi, from, to, [&](const AccessHit& hit) {
    out.push_back(GatherAccess(trace, list, hit, r));
    return ++n < max;
  });
}

}  // namespace

Expected<std::optional<Access>> LastWrite(const Trace& trace, Address address, std::uint64_t length,
                                          Position before, AddressKind kind) {
  return Nearest(trace, kWriteList, address, length, before, kind, false);
}

Expected<std::optional<Access>> NextWrite(const Trace& trace, Address address, std::uint64_t length,
                                          Position from, AddressKind kind) {
  return Nearest(trace, kWriteList, address, length, from, kind, true);
}

Expected<std::optional<Access>> LastRead(const Trace& trace, Address address, std::uint64_t length,
                                         Position before, AddressKind kind) {
  BACKSTEP_RETURN_IF_ERROR(CheckReads(trace));
  return Nearest(trace, kReadList, address, length, before, kind, false);
}

Expected<std::optional<Access>> NextRead(const Trace& trace, Address address, std::uint64_t length,
                                         Position from, AddressKind kind) {
  BACKSTEP_RETURN_IF_ERROR(CheckReads(trace));
  return Nearest(trace, kReadList, address, length, from, kind, true);
}

Expected<std::vector<Access>> History(const Trace& trace, Address address, std::uint64_t length,
                                      Position from, Position to, std::size_t max,
                                      AddressKind kind) {
  BACKSTEP_ASSIGN_OR_RETURN(std::vector<NativeRange> ranges,
                            NativeRanges(trace, address, length, kind, from));
  std::vector<Access> all;
  const std::uint64_t end = std::min(to.value, trace.event_count());
  for (const NativeRange& r : ranges) {
    if (max == 0) break;
    Collect(trace, kWriteList, r, from.value, end, max, all);
    if (TraceIndexOf(trace).records_reads())
      Collect(trace, kReadList, r, from.value, end, max, all);
  }
  auto key = [](const Access& a) { return std::tuple(a.event, a.is_write, a.address, a.data); };
  std::sort(all.begin(), all.end(),
            [&](const Access& a, const Access& b) { return key(a) < key(b); });
  all.erase(std::unique(all.begin(), all.end(),
                        [&](const Access& a, const Access& b) { return key(a) == key(b); }),
            all.end());
  if (all.size() > max) all.resize(max);
  return all;
}

}  // namespace backstep::core
