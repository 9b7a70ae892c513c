// Index queries for front ends: what the stub (and the LLDB plugin and the
// Python module) need from a trace's persistent index without seeing it.
//
// Events are numbered 0..event_count()-1; event e executes from position e
// to position e + 1.
//
// Costs: each query is a lookup in the index (O(log n) or better); none
// replays events. Thread-safety: like the Trace's const methods, callable
// from several threads.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "backstep/core/trace.h"
#include "backstep/core/types.h"

namespace backstep::core {

// Events between two register keyframes: a Cursor::Seek replays up to this
// many events, so moves shorter than it are cheaper stepped.
std::uint64_t KeyframeInterval(const Trace& trace);

// Smallest event >= `from` executed by `thread`; nullopt when there is none
// (or the thread executes no event).
std::optional<std::uint64_t> NextEventOfThread(const Trace& trace, ThreadId thread,
                                               std::uint64_t from);
// Largest event < `before` executed by `thread`; nullopt when there is none.
std::optional<std::uint64_t> PrevEventOfThread(const Trace& trace, ThreadId thread,
                                               std::uint64_t before);

// First event >= `from` whose pc (in the state before it; instruction and
// frame events) lies in [lo, hi] (inclusive), from the pc index.
std::optional<std::uint64_t> NextEventWithPcIn(const Trace& trace, Address lo, Address hi,
                                               std::uint64_t from);

// Register keyframes in the index (positions 0, K, 2K, ...).
std::uint64_t KeyframeCount(const Trace& trace);

// The first and last event a thread executes (nullopt: none), per thread of
// the index, in the index's order. Cost: O(log runs) per thread.
struct ThreadSpan {
  ThreadId thread;
  std::optional<std::uint64_t> first, last;
};
std::vector<ThreadSpan> ThreadSpans(const Trace& trace);

// Whether the index holds observed reads (the trace records them).
bool IndexRecordsReads(const Trace& trace);
// The last event < `position` that clears all memory (kEventClearsMemory:
// tfile frames); nullopt when there is none.
std::optional<std::uint64_t> LastMemoryClearBefore(const Trace& trace, std::uint64_t position);

}  // namespace backstep::core
