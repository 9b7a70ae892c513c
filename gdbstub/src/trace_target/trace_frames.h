// TraceFrameIndex: the TraceFrames capability of a TraceTarget (QTFrame,
// qTStatus, qTV, qXfer:traceframe-info; gdb's `tfind` over the live stub).
//
// Frame n is position n, from 0 to the end of the trace (the final state is
// a frame too); in a tfile trace, whose events are gdb's frames, frame n is
// position n + 1 (the state after event n). Selecting a frame points the
// ServedPosition's view() there, so registers and memory answer at that
// frame until it is deselected. Frame numbers stay below 2^31 (C ints in
// gdb).
//
// Costs: pc searches (`tfind pc`/`range`/`outside`/`line`) come from the
// index's pc lists, O(log n) per segment (plus, for a range, one lookup per
// distinct pc of the range in the segments searched), never a walk over
// the positions; `tfind tracepoint` walks tfile frames (they are few).
//
// Thread-safety: one thread at a time (the owning TraceTarget's).
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "backstep/core/cursor.h"
#include "backstep/core/trace.h"
#include "backstep/gdbstub/capabilities.h"
#include "trace_target/served_position.h"

namespace backstep::gdbstub {

class TraceFrameIndex final : public TraceFrames {
 public:
  // Both must outlive the object.
  TraceFrameIndex(const core::Trace& trace, ServedPosition& served)
      : trace_(trace), served_(served) {}

  std::uint64_t frame_count() override;
  std::optional<TraceFrameHit> FindFrame(const TraceFrameQuery& query,
                                         std::optional<std::uint32_t> current) override;
  core::Status SelectFrame(std::optional<std::uint32_t> frame) override;
  const core::TracepointDefinitions* tracepoint_definitions() override;
  std::optional<std::int64_t> TraceVariable(std::int32_t number) override;
  std::optional<std::string> TraceframeInfo() override;

 private:
  bool frames_are_events() const;  // tfile: frame n = position n + 1
  std::uint64_t FramePosition(std::uint32_t frame) const;
  // The tracepoint of `frame` (1 unless a tfile event names another).
  // Moves `probe`.
  std::uint32_t TracepointOf(core::Cursor& probe, std::uint32_t frame);
  // First frame >= first whose pc is in [lo, hi]. Moves `probe`.
  std::optional<std::uint32_t> NextFrameWithPc(core::Cursor& probe, core::Address lo,
                                               core::Address hi, std::uint64_t first);
  std::optional<std::uint32_t> NextTfileFrameWithPc(core::Cursor& probe, core::Address lo,
                                                    core::Address hi, std::uint64_t first);
  // Whether the pc of the thread that executes event `position` (at the end:
  // the last thread) lies in [lo, hi] at that position. Moves `probe`.
  bool PcOfPositionIn(core::Cursor& probe, std::uint64_t position, core::Address lo,
                      core::Address hi);
  // Calls visit(event) with the event of the tfile frame at position `at`;
  // false if there is none (not a tfile, position 0, a read error).
  template <typename Visit>
  bool VisitFrameEvent(core::Position at, Visit visit);

  const core::Trace& trace_;
  ServedPosition& served_;
};

}  // namespace backstep::gdbstub
