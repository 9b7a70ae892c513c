#include "backstep/core/trace_query.h"

#include "replay/trace_index_of.h"

namespace backstep::core {

std::uint64_t KeyframeInterval(const Trace& trace) {
  return TraceIndexOf(trace).keyframe_interval();
}

std::optional<std::uint64_t> NextEventOfThread(const Trace& trace, ThreadId thread,
                                               std::uint64_t from) {
  const TraceIndex& index = TraceIndexOf(trace);
  const std::optional<std::size_t> ti = index.ThreadIndexOf(thread);
  if (!ti) return std::nullopt;
  return index.NextEventOfThread(*ti, from);
}

std::optional<std::uint64_t> PrevEventOfThread(const Trace& trace, ThreadId thread,
                                               std::uint64_t before) {
  const TraceIndex& index = TraceIndexOf(trace);
  const std::optional<std::size_t> ti = index.ThreadIndexOf(thread);
  if (!ti) return std::nullopt;
  return index.PrevEventOfThread(*ti, before);
}

std::optional<std::uint64_t> NextEventWithPcIn(const Trace& trace, Address lo, Address hi,
                                               std::uint64_t from) {
  return TraceIndexOf(trace).NextPcInRange(lo, hi, from);
}

std::uint64_t KeyframeCount(const Trace& trace) { return TraceIndexOf(trace).keyframe_count(); }

std::vector<ThreadSpan> ThreadSpans(const Trace& trace) {
  const TraceIndex& index = TraceIndexOf(trace);
  const std::uint64_t events = trace.event_count();
  std::vector<ThreadSpan> out;
  for (std::size_t i = 0; i < index.thread_count(); ++i) {
    out.push_back({ThreadId(index.thread(i).tid), index.NextEventOfThread(i, 0),
                   index.PrevEventOfThread(i, events)});
  }
  return out;
}

bool IndexRecordsReads(const Trace& trace) { return TraceIndexOf(trace).records_reads(); }

std::optional<std::uint64_t> LastMemoryClearBefore(const Trace& trace, std::uint64_t position) {
  return TraceIndexOf(trace).LastMemoryClearBefore(position);
}

}  // namespace backstep::core
