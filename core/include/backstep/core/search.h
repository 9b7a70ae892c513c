// Stop conditions and searches: run forward or backward until something
// happens, answered from the indexes, never by stepping event by event.
//
// Semantics follow gdb's reverse-execution rules (docs/protocol.md §6), stated in
// states (positions):
//   forward from p:  the smallest of
//       q > p with pc(q) in breakpoints (thread filter applies to q's thread),
//       w + 1 for a watched access by event w >= p;
//   backward from p: the largest of
//       q < p with pc(q) in breakpoints,
//       w for a watched access by event w < p (stop *before* the access).
//   Nothing found: the fence (kFence) or the trace's end (kHistoryEnd) /
//   start (kHistoryBegin).
// pc(q) is the pc of the thread that executes event q (q < event_count).
// A resume always moves at least one position, so a breakpoint at the
// starting pc does not fire. A search that starts at (or beyond) the fence
// or the end in its direction stops at once, where it is.
// Costs: breakpoints are pc-index lookups (O(log n) each, plus skipping the
// hits of other threads under a thread filter); watchpoints are access-list
// lookups per page of the range that the index lists, plus two
// memory-state queries per write rejected by only_changes. `interrupt` is polled in every loop.
//
// Watch addresses are in the debugger's (virtual) address space; for
// physical traces they are translated at the starting position.
//
// Thread-safety: functions are reentrant; `interrupt` may be set from another
// thread.
#pragma once

#include <atomic>
#include <cstdint>
#include <optional>
#include <vector>

#include "backstep/core/expected.h"
#include "backstep/core/status.h"
#include "backstep/core/types.h"

namespace backstep::core {

class Trace;

enum class Direction : unsigned char { kForward, kBackward };
enum class WatchKind : unsigned char { kWrite, kRead, kAccess };

struct Watch {
  Address address = 0;
  std::uint64_t length = 1;
  WatchKind kind = WatchKind::kWrite;
  // For kWrite: report only writes that change at least one watched byte
  // (gdb's `watch` resumes silently on an unchanged value).
  bool only_changes = false;
};

struct StopCondition {
  std::vector<Address> breakpoints;  // pcs
  std::vector<Watch> watches;
  std::optional<ThreadId> thread;  // breakpoints only fire for this thread
  // Watches too: only accesses by `thread` stop (gdb applies its thread
  // filter to watchpoints itself; the Python module asks for it).
  bool thread_filters_watches = false;
  // Do not go below `fence_low` nor above `fence_high` (positions).
  Position fence_low = Position(0);
  Position fence_high = Position::Max();
  const std::atomic<bool>* interrupt = nullptr;
};

struct StopEvent {
  enum class Reason : unsigned char {
    kBreakpoint,    // position = the state whose pc hit
    kWatch,         // position per the rules above; `address` inside the watch
                    // (a tie with a breakpoint at one position reports the watch)
    kHistoryBegin,  // reached position 0 going backward
    kHistoryEnd,    // reached the last position going forward
    kFence,         // reached a fence
    kInterrupted,   // `interrupt` was set; position = where the search was
  };
  Reason reason;
  Position position;
  ThreadId thread;      // thread of the event at/around the stop
  Address address = 0;  // kBreakpoint: the pc; kWatch: accessed address
  WatchKind watch_kind = WatchKind::kWrite;
  std::uint64_t event = 0;  // kWatch: the accessing event w
};

// Runs from `from` in `direction` until `condition` stops it.
// Errors: InvalidArgument for a watch kind the trace cannot answer (reads in
// a trace without recorded reads), OutOfRange for `from` past the end.
Expected<StopEvent> RunUntil(const Trace& trace, Position from, Direction direction,
                             const StopCondition& condition);

// One recorded access to memory.
struct Access {
  std::uint64_t event;  // the accessing event (position of the state before it)
  ThreadId thread;
  bool is_write;
  Address address;                 // start of the accessed bytes (may extend past the range asked)
  std::vector<std::uint8_t> data;  // the bytes written or observed
};

// OK if [address, address + length) lies inside the trace's address space
// (2^64 bytes, 2^32 for a 32-bit architecture; the byte 2^64 - 1 is never
// part of a range); otherwise InvalidArgument saying so. Every query below
// and RunUntil's watches check it; front ends call it to refuse a range
// before anything else.
Status CheckRange(const Trace& trace, Address address, std::uint64_t length);

// The queries below take addresses of `kind`. For physical traces, virtual
// ranges are translated at `before` / `from` (current thread's page walk)
// and Access::address is reported in the same kind (an access that starts
// outside the asked range is mapped back linearly from the page it was
// found in). Virtual traces refuse kPhysical (Unsupported).
// Cost: O(log n) per page of the range that the index lists (pages nothing
// accessed cost nothing, so a range's length alone never makes a query
// slow or large) plus bounded block decodes; History is linear in what it
// returns. Physical traces translate a virtual range page by page and
// refuse one longer than kMaxTranslatedRange (InvalidArgument).
inline constexpr std::uint64_t kMaxTranslatedRange = std::uint64_t(1) << 30;

// Last write overlapping [address, address+length) by an event < before.
Expected<std::optional<Access>> LastWrite(const Trace& trace, Address address, std::uint64_t length,
                                          Position before,
                                          AddressKind kind = AddressKind::kVirtual);
// First write overlapping the range by an event >= from.
Expected<std::optional<Access>> NextWrite(const Trace& trace, Address address, std::uint64_t length,
                                          Position from, AddressKind kind = AddressKind::kVirtual);
// Same for recorded reads (InvalidArgument if the trace records none).
Expected<std::optional<Access>> LastRead(const Trace& trace, Address address, std::uint64_t length,
                                         Position before, AddressKind kind = AddressKind::kVirtual);
Expected<std::optional<Access>> NextRead(const Trace& trace, Address address, std::uint64_t length,
                                         Position from, AddressKind kind = AddressKind::kVirtual);
// Accesses (writes, and reads when recorded) overlapping the range by events
// in [from, to), oldest first (within one event: reads, then writes, each by
// address), at most `max` of them. Translated at `from`.
Expected<std::vector<Access>> History(const Trace& trace, Address address, std::uint64_t length,
                                      Position from, Position to, std::size_t max,
                                      AddressKind kind = AddressKind::kVirtual);

}  // namespace backstep::core
