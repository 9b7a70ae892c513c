// TraceFrameIndex (trace_frames.h): QTFrame (`tfind`) over a trace.
#include "trace_target/trace_frames.h"

#include <algorithm>
#include <charconv>
#include <limits>

#include "backstep/core/trace_query.h"
#include "protocol/hex.h"

namespace backstep::gdbstub {
namespace {

constexpr std::uint64_t kMaxFrames = std::numeric_limits<std::int32_t>::max();
constexpr core::Address kMaxAddress = std::numeric_limits<core::Address>::max();
// At most this many non-instruction events just before a pc-index hit are
// looked at (a run of them is one or two events in practice).
constexpr std::uint64_t kMaxNonInstructionRun = 64;

// "tracepoint 3, $x = 1" -> 3 (tfile events' descriptions).
std::optional<std::uint32_t> ParseTracepoint(std::string_view description) {
  constexpr std::string_view kPrefix = "tracepoint ";
  if (!description.starts_with(kPrefix)) return std::nullopt;
  description.remove_prefix(kPrefix.size());
  std::uint32_t value = 0;
  auto [end, ec] =
      std::from_chars(description.data(), description.data() + description.size(), value);
  if (ec != std::errc()) return std::nullopt;
  return value;
}

}  // namespace

bool TraceFrameIndex::frames_are_events() const { return trace_.header().format == "tfile"; }

std::uint64_t TraceFrameIndex::frame_count() {
  // Positions 0..event_count (the final state is a frame too); tfile: one
  // frame per event.
  const std::uint64_t frames = trace_.event_count() + (frames_are_events() ? 0 : 1);
  return std::min<std::uint64_t>(frames, kMaxFrames);
}

std::uint64_t TraceFrameIndex::FramePosition(std::uint32_t frame) const {
  return frames_are_events() ? std::uint64_t{frame} + 1 : frame;
}

std::uint32_t TraceFrameIndex::TracepointOf(core::Cursor& probe, std::uint32_t frame) {
  if (!frames_are_events()) return 1;
  // The frame's own event is event `frame` (it leads to position frame + 1).
  if (!probe.Seek(core::Position(frame)).ok()) return 1;
  auto event = probe.CurrentEvent();
  if (!event.ok()) return 1;
  return ParseTracepoint((*event)->description).value_or(1);
}

// First frame >= first whose PC lies in [lo, hi].
std::optional<std::uint32_t> TraceFrameIndex::NextFrameWithPc(core::Cursor& probe, core::Address lo,
                                                              core::Address hi,
                                                              std::uint64_t first) {
  const std::uint64_t count = frame_count();
  if (first >= count) return std::nullopt;
  if (frames_are_events()) return NextTfileFrameWithPc(probe, lo, hi, first);
  // The pc index holds instruction events: position q, the state before
  // instruction q. The other positions with a pc are the final state and
  // those before a non-instruction event (a syscall's effects, an interrupt
  // delivery): a run of them ends either at an indexed instruction or at the
  // end, so the earliest hit is in the run just before the first indexed hit
  // (or before the end), or is that hit.
  const std::uint64_t end = std::min<std::uint64_t>(trace_.event_count(), count);
  std::optional<std::uint64_t> found;
  std::uint64_t anchor = end;
  if (auto q = core::NextEventWithPcIn(trace_, lo, hi, first); q && *q < end) {
    found = anchor = *q;
  } else if (end < count && PcOfPositionIn(probe, end, lo, hi)) {
    found = end;  // the final state
  }
  for (std::uint64_t p = anchor, n = 0; p > first && n < kMaxNonInstructionRun; ++n) {
    --p;
    if (!probe.Seek(core::Position(p)).ok()) break;
    auto event = probe.CurrentEvent();
    if (!event.ok() || (*event)->kind == core::EventKind::kInstruction) break;
    if (PcOfPositionIn(probe, p, lo, hi)) found = p;
  }
  if (!found) return std::nullopt;
  return static_cast<std::uint32_t>(*found);
}

bool TraceFrameIndex::PcOfPositionIn(core::Cursor& probe, std::uint64_t position, core::Address lo,
                                     core::Address hi) {
  if (!probe.Seek(core::Position(position)).ok()) return false;
  auto pc = probe.Pc(probe.current_thread());
  return pc && *pc >= lo && *pc <= hi;
}

std::optional<std::uint32_t> TraceFrameIndex::NextTfileFrameWithPc(core::Cursor& probe,
                                                                   core::Address lo,
                                                                   core::Address hi,
                                                                   std::uint64_t first) {
  // The pc index keys each event by the pc of the state before it: frame f's
  // state is event f + 1's "before" state.
  const std::uint64_t count = frame_count();
  if (auto event = core::NextEventWithPcIn(trace_, lo, hi, first + 1)) {
    if (*event - 1 < count) return static_cast<std::uint32_t>(*event - 1);
  }
  if (count == trace_.event_count()) {
    // The last tfile frame is the final state, which no event precedes.
    const std::uint64_t last = count - 1;
    if (last >= first && PcOfPositionIn(probe, last + 1, lo, hi)) {
      return static_cast<std::uint32_t>(last);
    }
  }
  return std::nullopt;
}

std::optional<TraceFrameHit> TraceFrameIndex::FindFrame(const TraceFrameQuery& query,
                                                        std::optional<std::uint32_t> current) {
  auto frame_cursor = served_.FrameCursor();
  if (!frame_cursor.ok()) return std::nullopt;
  core::Cursor& probe = **frame_cursor;
  const std::uint64_t count = frame_count();
  const std::uint64_t first = current ? std::uint64_t{*current} + 1 : 0;
  std::optional<std::uint32_t> found;
  if (const auto* by_number = std::get_if<FrameByNumber>(&query)) {
    if (by_number->frame < count) found = by_number->frame;
  } else if (const auto* by_pc = std::get_if<FrameByPc>(&query)) {
    found = NextFrameWithPc(probe, by_pc->pc, by_pc->pc, first);
  } else if (const auto* in = std::get_if<FrameInRange>(&query)) {
    if (in->lo <= in->hi) found = NextFrameWithPc(probe, in->lo, in->hi, first);
  } else if (const auto* out = std::get_if<FrameOutsideRange>(&query)) {
    std::optional<std::uint32_t> below, above;
    if (out->lo > 0) below = NextFrameWithPc(probe, 0, out->lo - 1, first);
    if (out->hi < kMaxAddress) above = NextFrameWithPc(probe, out->hi + 1, kMaxAddress, first);
    found = below && above ? std::min(*below, *above) : below ? below : above;
  } else if (const auto* by_tp = std::get_if<FrameByTracepoint>(&query)) {
    // NOTE: linear in the frames skipped for tfile traces, whose frames are
    // few (gdb itself scans a tfile the same way).
    for (std::uint64_t f = first; f < count && !found; ++f) {
      if (TracepointOf(probe, static_cast<std::uint32_t>(f)) == by_tp->tracepoint) {
        found = static_cast<std::uint32_t>(f);
      } else if (!frames_are_events()) {
        break;  // every frame is tracepoint 1
      }
    }
  }
  std::optional<TraceFrameHit> hit;
  if (found) hit = TraceFrameHit{*found, TracepointOf(probe, *found)};
  // The searches above move the frame cursor: back to the selected frame.
  served_.RestoreFrame();
  return hit;
}

core::Status TraceFrameIndex::SelectFrame(std::optional<std::uint32_t> frame) {
  if (!frame) {
    served_.DeselectFrame();
    return core::Status::Ok();
  }
  if (*frame >= frame_count()) return core::Status::OutOfRange("no such trace frame");
  return served_.SelectFrameAt(core::Position(FramePosition(*frame)));
}

const core::TracepointDefinitions* TraceFrameIndex::tracepoint_definitions() {
  const std::optional<core::TracepointDefinitions>& defs = trace_.header().tracepoints;
  return defs ? &*defs : nullptr;
}

template <typename Visit>
bool TraceFrameIndex::VisitFrameEvent(core::Position at, Visit visit) {
  // A tfile frame at position p is event p - 1's collection.
  if (!frames_are_events() || at.value == 0) return false;
  auto cursor = trace_.AcquireCursor();
  if (!cursor.ok()) return false;
  bool visited = false;
  if ((*cursor)->Seek(core::Position(at.value - 1)).ok()) {
    if (auto event = (*cursor)->CurrentEvent(); event.ok()) {
      visit(**event);
      visited = true;
    }
  }
  trace_.ReleaseCursor(std::move(*cursor));
  return visited;
}

std::optional<std::int64_t> TraceFrameIndex::TraceVariable(std::int32_t number) {
  // As gdb's `target tfile`: only the viewed frame's own V blocks count.
  const core::Position at =
      served_.frame_selected() ? served_.selected_position() : served_.position();
  std::optional<std::int64_t> value;
  VisitFrameEvent(at, [&](const core::Event& event) {
    for (const core::TraceVariableValue& v : event.variables) {
      if (v.number == number) value = v.value;
    }
  });
  return value;
}

std::optional<std::string> TraceFrameIndex::TraceframeInfo() {
  if (!served_.frame_selected()) return std::nullopt;
  std::string xml = "<traceframe-info>";
  VisitFrameEvent(served_.selected_position(), [&](const core::Event& event) {
    for (const core::MemoryAccess& m : event.writes) {
      xml += "<memory start=\"0x";
      AppendHexNumber(xml, m.address);
      xml += "\" length=\"0x";
      AppendHexNumber(xml, m.data.size());
      xml += "\"/>";
    }
    for (const core::TraceVariableValue& v : event.variables) {
      xml += "<tvar id=\"" + std::to_string(v.number) + "\"/>";
    }
  });
  return xml + "</traceframe-info>";
}

}  // namespace backstep::gdbstub
