#include "testing/naive_search.h"

#include <algorithm>
#include <set>
#include <tuple>

namespace backstep::core::testing {
namespace {

bool Touches(const FakeAccess& a, const std::set<Address>& bytes) {
  auto it = bytes.lower_bound(a.address);
  return it != bytes.end() && *it < a.address + a.data.size();
}

// Does event w trigger watch `w`? Sets *address to a watched byte it touches.
bool Triggers(const TraceOracle& oracle, std::uint64_t event, const Watch& watch,
              const std::set<Address>& bytes) {
  const FakeEvent& e = oracle.trace().events[event];
  if (watch.kind != WatchKind::kWrite) {
    for (const FakeAccess& r : e.reads) {
      if (Touches(r, bytes)) return true;
    }
  }
  if (watch.kind != WatchKind::kRead) {
    for (const FakeAccess& w : e.writes) {
      if (!Touches(w, bytes)) continue;
      if (!watch.only_changes || watch.kind != WatchKind::kWrite) return true;
      for (Address b : bytes) {
        if (oracle.WriteChanges(event, b, b + 1)) return true;
      }
    }
  }
  return false;
}

}  // namespace

std::vector<Address> NativeBytes(const TraceOracle& oracle, Address address, std::uint64_t length) {
  std::vector<Address> out;
  for (Address a = address; a < address + length; ++a) {
    if (auto native = oracle.Translate(a)) out.push_back(*native);
  }
  return out;
}

StopEvent NaiveRunUntil(const TraceOracle& oracle, std::uint64_t from, Direction direction,
                        const StopCondition& c) {
  const std::uint64_t n = oracle.event_count();
  auto thread_around = [&](std::uint64_t p) {
    if (n == 0) return ThreadId();
    return oracle.thread_of(std::min(p, n - 1));
  };
  std::vector<std::set<Address>> watched;
  for (const Watch& w : c.watches) {
    auto bytes = NativeBytes(oracle, w.address, w.length);
    watched.emplace_back(bytes.begin(), bytes.end());
  }
  auto watch_at = [&](std::uint64_t event) -> std::optional<std::size_t> {
    for (std::size_t i = 0; i < c.watches.size(); ++i) {
      if (Triggers(oracle, event, c.watches[i], watched[i])) return i;
    }
    return std::nullopt;
  };
  auto break_at = [&](std::uint64_t q) {
    if (q >= n || !oracle.pc_of(q)) return false;
    if (c.thread && oracle.thread_of(q) != *c.thread) return false;
    return std::find(c.breakpoints.begin(), c.breakpoints.end(), *oracle.pc_of(q)) !=
           c.breakpoints.end();
  };
  auto stop = [&](StopEvent::Reason reason, std::uint64_t p) {
    return StopEvent{reason, Position(p), thread_around(p)};
  };
  auto watch_stop = [&](std::size_t i, std::uint64_t p, std::uint64_t event) {
    StopEvent s = stop(StopEvent::Reason::kWatch, p);
    s.thread = oracle.thread_of(event);
    s.event = event;
    s.watch_kind = c.watches[i].kind;
    return s;
  };
  auto bp_stop = [&](std::uint64_t q) {
    StopEvent s = stop(StopEvent::Reason::kBreakpoint, q);
    s.address = *oracle.pc_of(q);
    return s;
  };
  if (direction == Direction::kForward) {
    const std::uint64_t limit = std::min(c.fence_high.value, n);
    const auto edge = limit == n ? StopEvent::Reason::kHistoryEnd : StopEvent::Reason::kFence;
    if (from >= limit) return stop(edge, from);
    for (std::uint64_t s = from + 1; s <= limit; ++s) {
      if (auto i = watch_at(s - 1)) return watch_stop(*i, s, s - 1);
      if (break_at(s)) return bp_stop(s);
    }
    return stop(edge, limit);
  }
  const std::uint64_t limit = c.fence_low.value;
  const auto edge = limit == 0 ? StopEvent::Reason::kHistoryBegin : StopEvent::Reason::kFence;
  if (from <= limit) return stop(edge, from);
  for (std::uint64_t s = from; s-- > limit;) {
    if (auto i = watch_at(s)) return watch_stop(*i, s, s);
    if (break_at(s)) return bp_stop(s);
  }
  return stop(edge, limit);
}

std::vector<Access> NaiveAccesses(const TraceOracle& oracle, Address lo, Address hi,
                                  std::uint64_t from, std::uint64_t to, bool writes, bool reads) {
  std::vector<Access> out;
  const auto& events = oracle.trace().events;
  for (std::uint64_t e = from; e < to && e < events.size(); ++e) {
    auto add = [&](const std::vector<FakeAccess>& list, bool is_write) {
      for (const FakeAccess& a : list) {
        if (a.address < hi && lo < a.address + a.data.size()) {
          out.push_back(Access{e, events[e].thread, is_write, a.address, a.data});
        }
      }
    };
    if (reads) add(events[e].reads, false);
    if (writes) add(events[e].writes, true);
  }
  auto key = [](const Access& a) { return std::tuple(a.event, a.is_write, a.address, a.data); };
  std::sort(out.begin(), out.end(),
            [&](const Access& a, const Access& b) { return key(a) < key(b); });
  out.erase(std::unique(out.begin(), out.end(),
                        [&](const Access& a, const Access& b) { return key(a) == key(b); }),
            out.end());
  return out;
}

}  // namespace backstep::core::testing
