// LastRegisterWriter: a forward walk per keyframe interval, intervals taken
// backward (see the header for why decoding and not the recorded changes).
#include "queries/register_writer.h"

#include <map>

#include "backstep/core/trace_query.h"

namespace backstep::core::x86 {
namespace {

constexpr std::size_t kMaxInstruction = 15;

struct CachedDecode {
  std::size_t length = 0;  // bytes the decoding used (0: undecodable)
  bool writes = false;
};

// Whether the thread's instruction at the cursor writes `location`.
Expected<bool> InstructionWrites(Cursor& cursor, Decoder& decoder, Address pc,
                                 const RegisterBytes& location,
                                 std::map<Address, CachedDecode>& cache) {
  if (auto it = cache.find(pc); it != cache.end()) return it->second.writes;
  std::uint8_t bytes[kMaxInstruction], known[kMaxInstruction];
  BACKSTEP_RETURN_IF_ERROR(cursor.ReadMemory(pc, bytes, known));
  std::size_t n = 0;
  while (n < kMaxInstruction && known[n]) ++n;
  CachedDecode entry;
  const cs_insn* insn = decoder.Decode(std::span<const std::uint8_t>(bytes, n), pc);
  // Undecodable bytes may write anything: the chain stops there.
  entry.writes = insn == nullptr || decoder.WritesRegister(*insn, location);
  entry.length = insn ? n : kMaxInstruction;
  cache[pc] = entry;
  return entry.writes;
}

// Drops the decodings whose bytes an event wrote.
void Invalidate(const Event& event, std::map<Address, CachedDecode>& cache) {
  for (const MemoryAccess& w : event.writes) {
    const Address lo = w.address >= kMaxInstruction ? w.address - kMaxInstruction : 0;
    for (auto it = cache.lower_bound(lo);
         it != cache.end() && it->first < w.address + w.data.size();) {
      if (it->first + it->second.length > w.address) {
        it = cache.erase(it);
      } else {
        ++it;
      }
    }
  }
}

}  // namespace

Expected<RegisterWriter> LastRegisterWriter(const Trace& trace, Cursor& cursor, Decoder& decoder,
                                            ThreadId thread, const RegisterBytes& location,
                                            Position before, std::uint64_t max_events,
                                            const std::atomic<bool>* interrupt) {
  if (before.value > trace.event_count()) {
    return Status::OutOfRange("position " + std::to_string(before.value) + " past the end (" +
                              std::to_string(trace.event_count()) + ")");
  }
  RegisterWriter out;
  if (before.value == 0) return out;
  const std::uint64_t interval = KeyframeInterval(trace);
  const std::uint64_t floor = max_events >= before.value ? 0 : before.value - max_events;
  std::map<Address, CachedDecode> cache;
  std::uint64_t end = before.value;
  for (std::uint64_t k = (before.value - 1) / interval;; --k) {
    if (interrupt && interrupt->load(std::memory_order_relaxed)) {
      return Status::Interrupted("register search interrupted");
    }
    const std::uint64_t start = std::max(k * interval, floor);
    BACKSTEP_RETURN_IF_ERROR(cursor.Seek(Position(start)));
    cache.clear();
    bool found = false;
    for (std::uint64_t e = start; e < end; ++e) {
      BACKSTEP_ASSIGN_OR_RETURN(const Event* event, cursor.CurrentEvent());
      if (event->thread == thread) {
        bool writes = false;
        if (event->flags & kEventClearsRegisters) {
          out = {RegisterWriteSearch::Result::kCleared, e};
          found = true;
        }
        for (const RegisterWrite& w : event->registers) writes |= location.Overlaps(w.reg);
        if (!writes && event->kind == EventKind::kInstruction) {
          const std::optional<Address> pc = cursor.Pc(thread);
          if (!pc) {
            writes = true;  // unknown instruction: may write it
          } else {
            BACKSTEP_ASSIGN_OR_RETURN(writes,
                                      InstructionWrites(cursor, decoder, *pc, location, cache));
          }
        }
        if (writes) {
          out = {RegisterWriteSearch::Result::kFound, e};
          found = true;
        }
      }
      if (!cache.empty()) Invalidate(*event, cache);
      BACKSTEP_RETURN_IF_ERROR(cursor.StepForward());
    }
    if (found) return out;
    if (start <= floor) {
      if (floor > 0) out.result = RegisterWriteSearch::Result::kBeyondBound;
      return out;
    }
    end = start;
  }
}

}  // namespace backstep::core::x86
