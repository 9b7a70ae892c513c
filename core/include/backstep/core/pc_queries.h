// Positions at a pc, from the pc index: the next, the previous, and how many
// in a range, without listing them (the Python module's lazy
// `positions_at_pc` iterator and its len()).
//
// A position q is "at pc A" when event q is an instruction (or a tfile
// frame) and the pc of its thread in state q is A (the pc index's rule, see
// docs/formats/index-format.md). Positions are 0..event_count()-1.
//
// Costs: NextAtPc / PrevAtPc are O(log n) (binary searches plus the decode
// of one block of postings); CountAtPc is the same per index segment that
// overlaps [from, to).
//
// Thread-safety: reentrant; a Trace may be queried from several threads.
#pragma once

#include <cstdint>
#include <optional>

#include "backstep/core/types.h"

namespace backstep::core {

class Trace;

// Smallest position >= from at `pc`.
std::optional<Position> NextAtPc(const Trace& trace, Address pc, Position from);
// Largest position < before at `pc`.
std::optional<Position> PrevAtPc(const Trace& trace, Address pc, Position before);
// Number of positions in [from, to) at `pc`.
std::uint64_t CountAtPc(const Trace& trace, Address pc, Position from, Position to);

}  // namespace backstep::core
