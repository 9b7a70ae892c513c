// Cursor: the state of a trace at one position.
//
// A cursor answers "what are the registers and memory at position p" for
// any p in 0..event_count. Moving costs one keyframe lookup plus the replay
// of at most one keyframe interval of register changes (memory comes from the
// memory index, not from replay), so any position is O(K) away.
//
// Memory reads report a known-mask: backstep never invents a value. A byte is
// known if the initial image holds it, if an event before p wrote it, or if a
// read recorded by an event observed it and no write came between
// (value inference, both directions).
//
// Thread-safety: one thread at a time. Cursors of one Trace are independent.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <vector>

#include "backstep/core/event.h"
#include "backstep/core/expected.h"
#include "backstep/core/register_file.h"
#include "backstep/core/types.h"

namespace backstep::core {

class Trace;

class Cursor {
 public:
  virtual ~Cursor() = default;

  virtual const Trace& trace() const = 0;
  virtual Position position() const = 0;
  // Moves to `p` (0..event_count). OutOfRange past the end.
  virtual Status Seek(Position p) = 0;
  // One event forward / backward. OutOfRange at the ends (the cursor stays).
  virtual Status StepForward() = 0;
  virtual Status StepBackward() = 0;

  // The thread that executes the event at position() (the next one); at the
  // end of the trace, the thread of the last event.
  virtual ThreadId current_thread() const = 0;
  // Threads that exist at position().
  virtual std::vector<ThreadId> threads() const = 0;
  // A thread's registers at position(): its state after its own last event
  // before position(). NotFound for an unknown thread.
  // The reference is valid until the cursor moves.
  virtual Expected<const RegisterFile*> Registers(ThreadId thread) const = 0;
  // The pc of `thread` at position(), if known.
  virtual std::optional<Address> Pc(ThreadId thread) const = 0;

  // Reads memory at position(). `kind` is the space of `address`: virtual
  // addresses of a physical trace are translated through the page walk at
  // this position. Sets known[i] to 1 for each known byte, 0 elsewhere (and
  // out[i] to 0). REQUIRES: out.size() == known.size(). Errors: translation
  // impossible (the paging registers of current_thread() are unknown) is
  // Unsupported for the whole request, as is a kPhysical read of a virtual
  // trace; unmapped pages are unknown bytes, not errors. Without paging
  // (CR0.PG = 0) virtual = physical, as on the CPU; 32-bit and PAE paging are
  // walked like 4- and 5-level (paging/x86_paging.h).
  // Cost: index lookups per 4 KiB page (see docs/formats/index-format.md), plus
  // the page walk's reads for physical traces; no replay.
  virtual Status ReadMemory(Address address, std::span<std::uint8_t> out,
                            std::span<std::uint8_t> known,
                            AddressKind kind = AddressKind::kVirtual) const = 0;

  // The event at position() (the next one to execute); NotFound at the end.
  // The event's views are valid until the cursor moves.
  virtual Expected<const Event*> CurrentEvent() = 0;
};

}  // namespace backstep::core
