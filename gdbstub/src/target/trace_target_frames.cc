// QTFrame (`tfind`) over a trace: frame n is a position (see
// backstep/gdbstub/trace_target.h for the mapping); pc searches come from the
// index's pc lists, so `tfind pc`/`range`/`outside`/`line` cost O(log n).
#include <charconv>
#include <limits>

#include "index/trace_index.h"
#include "target/trace_target.h"

namespace backstep::gdbstub {
namespace {

constexpr std::uint64_t kMaxFrames = std::numeric_limits<std::int32_t>::max();
constexpr core::Address kMaxAddress = std::numeric_limits<core::Address>::max();

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

bool TraceTarget::frames_are_events() const { return trace_->header().format == "tfile"; }

std::uint64_t TraceTarget::frame_count() {
  return std::min<std::uint64_t>(trace_->event_count(), kMaxFrames);
}

std::uint64_t TraceTarget::FramePosition(std::uint32_t frame) const {
  return frames_are_events() ? std::uint64_t{frame} + 1 : frame;
}

std::uint32_t TraceTarget::TracepointOf(std::uint32_t frame) {
  if (!frames_are_events() || !frame_cursor_) return 1;
  // The frame's own event is event `frame` (it leads to position frame + 1).
  if (!frame_cursor_->Seek(core::Position(frame)).ok()) return 1;
  auto event = frame_cursor_->CurrentEvent();
  if (!event.ok()) return 1;
  return ParseTracepoint((*event)->description).value_or(1);
}

// First frame >= first whose PC lies in [lo, hi].
std::optional<std::uint32_t> TraceTarget::NextFrameWithPc(core::Address lo, core::Address hi,
                                                          std::uint64_t first) {
  const std::uint64_t count = frame_count();
  if (first >= count) return std::nullopt;
  // The pc index keys each event by the pc of the state before it: frame f's
  // state is event FramePosition(f)'s "before" state.
  const std::uint64_t shift = frames_are_events() ? 1 : 0;
  if (auto event = trace_->index().NextPcInRange(lo, hi, first + shift)) {
    if (*event - shift < count) return static_cast<std::uint32_t>(*event - shift);
  }
  if (shift == 1 && count == trace_->event_count()) {
    // The last tfile frame is the final state, which no event precedes.
    const std::uint64_t last = count - 1;
    if (last >= first && frame_cursor_ && frame_cursor_->Seek(core::Position(last + 1)).ok()) {
      auto pc = frame_cursor_->Pc(frame_cursor_->current_thread());
      if (pc && *pc >= lo && *pc <= hi) return static_cast<std::uint32_t>(last);
    }
  }
  return std::nullopt;
}

std::optional<TraceFrameHit> TraceTarget::FindFrame(const TraceFrameQuery& query,
                                                    std::optional<std::uint32_t> current) {
  if (!frame_cursor_) {
    auto cursor = trace_->NewCursor();
    if (!cursor.ok()) return std::nullopt;
    frame_cursor_ = std::move(*cursor);
  }
  const std::uint64_t count = frame_count();
  const std::uint64_t first = current ? std::uint64_t{*current} + 1 : 0;
  std::optional<std::uint32_t> found;
  if (const auto* by_number = std::get_if<FrameByNumber>(&query)) {
    if (by_number->frame < count) found = by_number->frame;
  } else if (const auto* by_pc = std::get_if<FrameByPc>(&query)) {
    found = NextFrameWithPc(by_pc->pc, by_pc->pc, first);
  } else if (const auto* in = std::get_if<FrameInRange>(&query)) {
    if (in->lo <= in->hi) found = NextFrameWithPc(in->lo, in->hi, first);
  } else if (const auto* out = std::get_if<FrameOutsideRange>(&query)) {
    std::optional<std::uint32_t> below, above;
    if (out->lo > 0) below = NextFrameWithPc(0, out->lo - 1, first);
    if (out->hi < kMaxAddress) above = NextFrameWithPc(out->hi + 1, kMaxAddress, first);
    found = below && above ? std::min(*below, *above) : below ? below : above;
  } else if (const auto* by_tp = std::get_if<FrameByTracepoint>(&query)) {
    // NOTE: linear in the frames skipped for tfile traces, whose frames are
    // few (gdb itself scans a tfile the same way).
    for (std::uint64_t f = first; f < count && !found; ++f) {
      if (TracepointOf(static_cast<std::uint32_t>(f)) == by_tp->tracepoint) {
        found = static_cast<std::uint32_t>(f);
      } else if (!frames_are_events()) {
        break;  // every frame is tracepoint 1
      }
    }
  }
  std::optional<TraceFrameHit> hit;
  if (found) hit = TraceFrameHit{*found, TracepointOf(*found)};
  // The searches above move frame_cursor_: put it back on the selected frame.
  if (frame_cursor_active_ && !frame_cursor_->Seek(selected_position_).ok()) {
    frame_cursor_active_ = false;
  }
  return hit;
}

core::Status TraceTarget::SelectFrame(std::optional<std::uint32_t> frame) {
  if (!frame) {
    frame_cursor_active_ = false;
    return core::Status::Ok();
  }
  if (*frame >= frame_count()) return core::Status::OutOfRange("no such trace frame");
  if (!frame_cursor_) {
    BACKSTEP_ASSIGN_OR_RETURN(frame_cursor_, trace_->NewCursor());
  }
  selected_position_ = core::Position(FramePosition(*frame));
  BACKSTEP_RETURN_IF_ERROR(frame_cursor_->Seek(selected_position_));
  frame_cursor_active_ = true;
  return core::Status::Ok();
}

}  // namespace backstep::gdbstub
