// LastRegisterWrite: a bounded backward scan, one keyframe interval at a
// time (see the header for why there is no per-register index).
#include "backstep/core/register_queries.h"

#include <algorithm>

#include "backstep/core/trace.h"
#include "index/trace_index.h"
#include "replay/trace_index_of.h"

namespace backstep::core {

Expected<RegisterWriteSearch> LastRegisterWrite(const Trace& trace, ThreadId thread,
                                                std::span<const RegisterId> regs, Position before,
                                                std::uint64_t max_events,
                                                const std::atomic<bool>* interrupt) {
  const TraceIndex& index = TraceIndexOf(trace);
  if (before.value > index.event_count()) {
    return Status::OutOfRange("position " + std::to_string(before.value) + " past the end (" +
                              std::to_string(index.event_count()) + ")");
  }
  RegisterWriteSearch out;
  if (before.value == 0) return out;
  const std::uint64_t interval = index.keyframe_interval();
  const std::uint64_t floor = max_events >= before.value ? 0 : before.value - max_events;
  BACKSTEP_ASSIGN_OR_RETURN(std::unique_ptr<TraceReader> reader, trace.NewReader());
  Event event;
  std::uint64_t end = before.value;
  // Intervals from the one holding before-1 down to the bound.
  for (std::uint64_t k = (before.value - 1) / interval;; --k) {
    if (interrupt && interrupt->load(std::memory_order_relaxed)) {
      return Status::Interrupted("register search interrupted");
    }
    const std::uint64_t start = k * interval;
    BACKSTEP_RETURN_IF_ERROR(reader->Seek(index.KeyframeReaderPosition(k)));
    bool found = false;
    for (std::uint64_t e = start; e < end; ++e) {
      BACKSTEP_ASSIGN_OR_RETURN(bool more, reader->Next(&event));
      if (!more) break;
      if (e < floor || event.thread != thread) continue;
      if (event.flags & kEventClearsRegisters) {
        out = {RegisterWriteSearch::Result::kCleared, e};
        found = true;
      }
      for (const RegisterWrite& w : event.registers) {
        if (std::find(regs.begin(), regs.end(), w.reg) != regs.end()) {
          out = {RegisterWriteSearch::Result::kFound, e};
          found = true;
          break;
        }
      }
    }
    if (found) return out;
    if (start <= floor) {
      if (floor > 0) out.result = RegisterWriteSearch::Result::kBeyondBound;
      return out;
    }
    end = start;
  }
}

}  // namespace backstep::core
