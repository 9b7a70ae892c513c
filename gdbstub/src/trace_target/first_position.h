// Where a served trace starts and ends: the first and the last position whose
// pc is known.
//
// gdb and LLDB cannot show a stop without a pc ("PC register is not
// available" aborts `target remote`), and several formats begin with a state
// that knows none: a tfile's position 0 is the state before its first frame,
// an x64dbg trace knows no register before its first full-register block, a
// BAP trace only what its first instructions touched. The rule, the same for
// every format: a client starts at the first position where the pc of the
// thread executing the next event (at the end: the last thread) is known,
// and its history begins there (reverse execution stops there with
// "No more reverse-execution history"; `monitor goto` refuses to go earlier
// and says why). Symmetrically, its history ends at the last position with
// a known pc (an x64dbg trace does not hold the registers after its last
// instruction). `tfind N` still selects any frame.
#pragma once

#include <cstdint>

#include "backstep/core/cursor.h"
#include "backstep/core/expected.h"
#include "backstep/core/trace.h"

namespace backstep::gdbstub {

// At most this many positions are stepped over looking for a known pc.
inline constexpr std::uint64_t kMaxStartScan = std::uint64_t{1} << 20;

// The first position with a known pc, found by stepping `cursor` (at
// position 0) forward; the cursor is left there. Cost: one step per position
// skipped (none for REVEN and usercorn traces, one for a tfile).
// Errors: NotFound when no position of the first kMaxStartScan (or of the
// whole trace) knows its pc, naming the trace; the cursor's errors.
core::Expected<core::Position> FirstPositionWithPc(const core::Trace& trace, core::Cursor& cursor);

// The last position with a known pc, at or after `first` (which has one),
// found by seeking `cursor` to the end and stepping back, at most
// kMaxStartScan positions (past that, `first`'s answer stands: the end
// itself). Leaves the cursor anywhere. Errors: the cursor's.
core::Expected<core::Position> LastPositionWithPc(const core::Trace& trace, core::Cursor& cursor,
                                                  core::Position first);

}  // namespace backstep::gdbstub
