// RunUntil: each stop condition becomes index lookups (the pc index for
// breakpoints, the access lists for watchpoints); the nearest candidate in
// the direction of travel wins. Nothing here steps event by event: loops
// only skip hits the thread filter or the only_changes filter reject, and
// they poll the interrupt flag.
#include <algorithm>

#include "search/search_internal.h"

namespace backstep::core {
namespace {

constexpr std::uint64_t kPollEvery = 256;

struct WatchRanges {
  const Watch* watch;
  std::vector<NativeRange> ranges;
};

struct Candidate {
  std::uint64_t position;
  StopEvent stop;
};

class Search {
 public:
  Search(const Trace& trace, std::uint64_t from, const StopCondition& c)
      : trace_(trace), index_(TraceIndexOf(trace)), from_(from), c_(c), changes_(trace) {}

  Expected<StopEvent> Run(Direction direction);

 private:
  bool Interrupted() { return c_.interrupt && c_.interrupt->load(std::memory_order_relaxed); }
  StopEvent Stop(StopEvent::Reason reason, std::uint64_t position) const {
    return StopEvent{reason, Position(position), ThreadAround(index_, position)};
  }
  // An interrupted lookup stops where the search was; other errors propagate.
  Expected<StopEvent> Failed(const Status& s) const {
    if (s.IsInterrupted()) return Stop(StopEvent::Reason::kInterrupted, from_);
    return s;
  }
  // Breakpoint hits: first q >= from / last q < before with pc(q) == pc and
  // the thread filter satisfied, bounded by `limit`.
  Expected<std::optional<std::uint64_t>> NextBreak(Address pc, std::uint64_t from,
                                                   std::uint64_t limit);
  Expected<std::optional<std::uint64_t>> PrevBreak(Address pc, std::uint64_t before,
                                                   std::uint64_t limit);
  // The watch's first accepted access by an event >= from (forward) or
  // last by an event < before (backward), as a candidate stop.
  Expected<std::optional<Candidate>> WatchHit(const WatchRanges& w, Direction direction,
                                              std::uint64_t limit);
  Expected<std::optional<Candidate>> ListHit(const WatchRanges& w, AccessListKind list,
                                             Direction direction, std::uint64_t limit);

  const Trace& trace_;
  const TraceIndex& index_;
  const std::uint64_t from_;
  const StopCondition& c_;
  std::optional<std::size_t> thread_;  // thread index of the filter (none: not in trace)
  ChangeDetector changes_;
};

Expected<std::optional<std::uint64_t>> Search::NextBreak(Address pc, std::uint64_t from,
                                                         std::uint64_t limit) {
  if (c_.thread && !thread_) return std::optional<std::uint64_t>();  // thread not in trace
  std::optional<std::uint64_t> q = index_.NextPc(pc, from);
  for (std::uint64_t n = 1; q && *q <= limit; ++n) {
    if (!c_.thread || index_.ThreadIndexAt(*q) == *thread_) return q;
    if (n % kPollEvery == 0 && Interrupted()) return Status::Interrupted("search interrupted");
    const std::optional<std::uint64_t> next = index_.NextEventOfThread(*thread_, *q + 1);
    if (!next) return std::optional<std::uint64_t>();
    q = index_.NextPc(pc, *next);
  }
  return std::optional<std::uint64_t>();
}

Expected<std::optional<std::uint64_t>> Search::PrevBreak(Address pc, std::uint64_t before,
                                                         std::uint64_t limit) {
  if (c_.thread && !thread_) return std::optional<std::uint64_t>();
  std::optional<std::uint64_t> q = index_.PrevPc(pc, before);
  for (std::uint64_t n = 1; q && *q >= limit; ++n) {
    if (!c_.thread || index_.ThreadIndexAt(*q) == *thread_) return q;
    if (n % kPollEvery == 0 && Interrupted()) return Status::Interrupted("search interrupted");
    const std::optional<std::uint64_t> prev = index_.PrevEventOfThread(*thread_, *q);
    if (!prev) return std::optional<std::uint64_t>();
    q = index_.PrevPc(pc, *prev + 1);
  }
  return std::optional<std::uint64_t>();
}

Expected<std::optional<Candidate>> Search::ListHit(const WatchRanges& w, AccessListKind list,
                                                   Direction direction, std::uint64_t limit) {
  const bool forward = direction == Direction::kForward;
  const bool filter =
      list == kWriteList && w.watch->kind == WatchKind::kWrite && w.watch->only_changes;
  if (c_.thread && c_.thread_filters_watches && !thread_) return std::optional<Candidate>();
  std::uint64_t bound = from_;  // forward: events >= bound; backward: events < bound
  for (std::uint64_t n = 1;; ++n) {
    std::optional<AccessHit> best;
    const NativeRange* best_range = nullptr;
    for (const NativeRange& r : w.ranges) {
      BACKSTEP_ASSIGN_OR_RETURN(std::optional<AccessHit> hit,
                                forward ? index_.NextAccess(list, r.lo, r.hi, bound, c_.interrupt)
                                        : index_.PrevAccess(list, r.lo, r.hi, bound, c_.interrupt));
      if (hit && (!best || (forward ? hit->entry.event < best->entry.event
                                    : hit->entry.event > best->entry.event))) {
        best = hit;
        best_range = &r;
      }
    }
    if (!best) return std::optional<Candidate>();
    const std::uint64_t event = best->entry.event;
    const std::uint64_t position = forward ? event + 1 : event;
    if (forward ? position > limit : position < limit) return std::optional<Candidate>();
    const bool thread_ok = !c_.thread || !c_.thread_filters_watches ||
                           (thread_ && index_.ThreadIndexAt(event) == *thread_);
    if (thread_ok && (!filter || changes_.Changes(event, w.ranges))) {
      StopEvent stop = Stop(StopEvent::Reason::kWatch, position);
      stop.thread = ThreadAround(index_, event);
      const Address start = std::max(best->address(), best_range->lo);
      stop.address = best_range->debugger + (start - best_range->lo);
      stop.watch_kind = w.watch->kind;
      stop.event = event;
      return std::optional<Candidate>(Candidate{position, stop});
    }
    bound = forward ? event + 1 : event;
    // Each rejected write cost two value queries: poll often.
    if (n % 16 == 0 && Interrupted()) return Status::Interrupted("search interrupted");
  }
}

Expected<std::optional<Candidate>> Search::WatchHit(const WatchRanges& w, Direction direction,
                                                    std::uint64_t limit) {
  std::optional<Candidate> best;
  for (AccessListKind list : {kWriteList, kReadList}) {
    const WatchKind kind = w.watch->kind;
    if ((list == kWriteList && kind == WatchKind::kRead) ||
        (list == kReadList && kind == WatchKind::kWrite)) {
      continue;
    }
    BACKSTEP_ASSIGN_OR_RETURN(std::optional<Candidate> hit, ListHit(w, list, direction, limit));
    // For one access event, the read comes first (it sees the state before).
    if (hit && (!best || (direction == Direction::kForward ? hit->position < best->position
                                                           : hit->position > best->position))) {
      best = hit;
    }
  }
  return best;
}

Expected<StopEvent> Search::Run(Direction direction) {
  const std::uint64_t n = index_.event_count();
  const bool forward = direction == Direction::kForward;
  if (Interrupted()) return Stop(StopEvent::Reason::kInterrupted, from_);
  if (c_.thread) {
    thread_ = index_.ThreadIndexOf(*c_.thread);
  }
  // Where the search may stop at the latest (forward) / earliest (backward).
  const std::uint64_t limit = forward ? std::min(c_.fence_high.value, n) : c_.fence_low.value;
  auto edge = [&]() {
    if (forward)
      return Stop(limit == n ? StopEvent::Reason::kHistoryEnd : StopEvent::Reason::kFence, limit);
    return Stop(limit == 0 ? StopEvent::Reason::kHistoryBegin : StopEvent::Reason::kFence, limit);
  };
  if (forward ? from_ >= limit : from_ <= limit) {
    StopEvent stop = edge();
    stop.position = Position(from_);  // already at (or past) the edge: do not move
    stop.thread = ThreadAround(index_, from_);
    return stop;
  }
  std::vector<WatchRanges> watches;
  for (const Watch& w : c_.watches) {
    if (w.kind != WatchKind::kWrite && !index_.records_reads()) {
      return Status::InvalidArgument(trace_.path() +
                                     ": read/access watchpoints need a trace that records reads");
    }
    BACKSTEP_ASSIGN_OR_RETURN(
        std::vector<NativeRange> ranges,
        NativeRanges(trace_, w.address, w.length, AddressKind::kVirtual, Position(from_)));
    watches.push_back({&w, std::move(ranges)});
  }
  std::optional<Candidate> best;
  auto better = [&](std::uint64_t position) {
    return !best || (forward ? position < best->position : position > best->position);
  };
  for (Address pc : c_.breakpoints) {
    auto q = forward ? NextBreak(pc, from_ + 1, limit) : PrevBreak(pc, from_, limit);
    if (!q.ok()) return Failed(q.status());
    if (*q && better(**q)) {
      StopEvent stop = Stop(StopEvent::Reason::kBreakpoint, **q);
      stop.address = pc;
      best = Candidate{**q, stop};
    }
  }
  for (const WatchRanges& w : watches) {
    auto hit = WatchHit(w, direction, limit);
    if (!hit.ok()) return Failed(hit.status());
    // Ties with a breakpoint go to the watch.
    if (*hit && (!best || (*hit)->position == best->position || better((*hit)->position))) {
      if (!best || best->stop.reason != StopEvent::Reason::kWatch ||
          (*hit)->position != best->position) {
        best = *hit;
      }
    }
  }
  if (best) return best->stop;
  return edge();
}

}  // namespace

Expected<StopEvent> RunUntil(const Trace& trace, Position from, Direction direction,
                             const StopCondition& condition) {
  if (from.value > trace.event_count()) {
    return Status::OutOfRange("search from position " + std::to_string(from.value) +
                              " past the end (" + std::to_string(trace.event_count()) + ")");
  }
  return Search(trace, from.value, condition).Run(direction);
}

}  // namespace backstep::core
