// Thin public wrappers over the pc index (index/index_pc.cc), so front ends
// need not include the index's private header.
#include "backstep/core/pc_queries.h"

#include <algorithm>

#include "backstep/core/trace.h"
#include "index/trace_index.h"
#include "replay/trace_index_of.h"

namespace backstep::core {

std::optional<Position> NextAtPc(const Trace& trace, Address pc, Position from) {
  if (from.value >= trace.event_count()) return std::nullopt;
  auto q = TraceIndexOf(trace).NextPc(pc, from.value);
  if (!q) return std::nullopt;
  return Position(*q);
}

std::optional<Position> PrevAtPc(const Trace& trace, Address pc, Position before) {
  auto q = TraceIndexOf(trace).PrevPc(pc, before.value);
  if (!q) return std::nullopt;
  return Position(*q);
}

std::uint64_t CountAtPc(const Trace& trace, Address pc, Position from, Position to) {
  const std::uint64_t end = std::min(to.value, trace.event_count());
  return TraceIndexOf(trace).CountPc(pc, from.value, end);
}

}  // namespace backstep::core
