// The last event that wrote a register: "where did the value in rax come
// from" (the provenance chain, provenance.h, and the Python module).
//
// The index keeps registers as keyframes (every K events) plus the trace's
// per-event writes; it has no per-register list. LastRegisterWrite therefore
// scans backward one keyframe interval at a time: it seeks a reader to the
// keyframe before `before`, decodes the interval's events forward and keeps
// the last write of the thread to any of `regs`; if there is none it moves
// one interval back. The scan is bounded by `max_events` (default 2^20
// events, 512 intervals of 2048): beyond it the answer is kBeyondBound.
//
// Cost: O(events scanned) decodes, ~K events per interval; no replay of
// register values. `interrupt` is polled once per interval.
//
// Thread-safety: reentrant (one reader per call); `interrupt` may be set
// from another thread.
#pragma once

#include <atomic>
#include <cstdint>
#include <span>

#include "backstep/core/arch.h"
#include "backstep/core/expected.h"
#include "backstep/core/types.h"

namespace backstep::core {

class Trace;

struct RegisterWriteSearch {
  enum class Result : unsigned char {
    kFound,        // `event` wrote one of the registers (set or operation)
    kCleared,      // `event` made the thread's registers unknown (tfile frame)
    kNone,         // no event of the thread before `before` wrote them: the
                   // value is the thread's initial one (position 0)
    kBeyondBound,  // not found within `max_events` events
  };
  Result result = Result::kNone;
  std::uint64_t event = 0;
};

inline constexpr std::uint64_t kDefaultRegisterScanEvents = std::uint64_t(1) << 20;

// Last event < before, executed by `thread`, that writes any register of
// `regs`. Errors: OutOfRange for `before` past the end, Corruption from the
// reader, Interrupted.
Expected<RegisterWriteSearch> LastRegisterWrite(
    const Trace& trace, ThreadId thread, std::span<const RegisterId> regs, Position before,
    std::uint64_t max_events = kDefaultRegisterScanEvents,
    const std::atomic<bool>* interrupt = nullptr);

}  // namespace backstep::core
