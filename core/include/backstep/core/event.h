// Event: what one step of a trace does.
//
// Event t turns state t into state t+1. It is executed by one thread and
// carries the register changes of that thread, the memory it wrote (in the
// trace's address kind) and, where the format records them, the memory it
// read together with the values seen (which describe state t).
//
// Lifetime: the spans in `writes` and `reads` point into the reader's
// buffers (often the mapped file); they stay valid until the next call to
// the reader that produced the event. Copy what must outlive that.
//
// Thread-safety: a value type; not synchronized.
#pragma once

#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "backstep/core/register_file.h"
#include "backstep/core/types.h"

namespace backstep::core {

enum class EventKind : unsigned char {
  kInstruction = 0,  // one retired instruction
  kSyscall,          // kernel side effects of a system call
  kInterrupt,        // interrupt delivery
  kException,        // fault or trap delivery
  kMarker,           // a text marker or any other non-instruction event
  kFrame,            // a tfile trace frame (a snapshot, not a step)
};

// Event::flags bits.
enum EventFlag : std::uint32_t {
  // Before this event's writes apply, every register of the thread becomes
  // unknown (tfile frames: a frame knows only what it collected).
  kEventClearsRegisters = 1u << 0,
  // Before this event's writes apply, all memory becomes unknown.
  kEventClearsMemory = 1u << 1,
};

struct MemoryAccess {
  Address address = 0;
  std::span<const std::uint8_t> data;
};

// A trace state variable's value collected with a tfile frame (a `V`
// block): gdb's `$name` at that frame.
struct TraceVariableValue {
  std::int32_t number = 0;
  std::int64_t value = 0;
};

struct Event {
  ThreadId thread;
  EventKind kind = EventKind::kInstruction;
  std::uint32_t flags = 0;
  std::string_view description;               // "other" events: "page fault", ... (view; see above)
  std::vector<RegisterWrite> registers;       // in order of application
  std::vector<MemoryAccess> writes;           // in order of application
  std::vector<MemoryAccess> reads;            // values observed in state t
  std::vector<TraceVariableValue> variables;  // kFrame: trace state variables it collected

  // Empties the event, keeping the vectors' capacity.
  void Clear() {
    thread = ThreadId();
    kind = EventKind::kInstruction;
    flags = 0;
    description = {};
    registers.clear();
    writes.clear();
    reads.clear();
    variables.clear();
  }
};

std::string_view EventKindName(EventKind kind);

}  // namespace backstep::core
