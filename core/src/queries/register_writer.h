// The instruction (or other event) that last wrote a register, by what the
// instructions do rather than by what the trace recorded changing.
//
// Recordings write a register only when its value changes (UCIR's OP_REG,
// our recorder), so the last recorded change of rax is not the last write
// of rax when an instruction loaded the value rax already held. This
// search decodes every instruction of the thread and takes the last one
// that writes any byte of the location (x86_dataflow.h), or the last event
// whose recorded register writes name it (system calls, signal delivery:
// the trace's record wins where it has one).
//
// It walks a cursor forward one keyframe interval at a time, from the
// interval holding before-1 backward, keeping the last writer of each
// interval. Decodings are cached by pc within an interval and dropped when
// an event writes the instruction's bytes (self-modifying code).
// Bounded by `max_events` like LastRegisterWrite (register_queries.h).
//
// Thread-safety: uses the given cursor and decoder; one thread at a time.
#pragma once

#include <atomic>
#include <cstdint>

#include "backstep/core/cursor.h"
#include "backstep/core/expected.h"
#include "backstep/core/register_queries.h"
#include "backstep/core/trace.h"
#include "queries/x86_dataflow.h"

namespace backstep::core::x86 {

// Result kFound: `event` writes the location; kCleared: `event` made the
// thread's registers unknown; kNone: no event of the thread before `before`
// writes it; kBeyondBound: none within `max_events`. An instruction whose
// pc is unknown or whose bytes do not decode counts as a writer: the search
// stops there rather than skip a possible one.
struct RegisterWriter {
  RegisterWriteSearch::Result result = RegisterWriteSearch::Result::kNone;
  std::uint64_t event = 0;
};

// Moves `cursor`. Errors: OutOfRange for `before` past the end, the
// reader's errors, Interrupted.
Expected<RegisterWriter> LastRegisterWriter(const Trace& trace, Cursor& cursor, Decoder& decoder,
                                            ThreadId thread, const RegisterBytes& location,
                                            Position before, std::uint64_t max_events,
                                            const std::atomic<bool>* interrupt);

}  // namespace backstep::core::x86
