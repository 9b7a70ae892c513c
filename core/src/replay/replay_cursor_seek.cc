// ReplayCursor's jumps: where the replay to a position starts (the state
// the cursor is in, a keyframe, or an event that clears the registers) and
// the replay itself (keyframes: index/trace_index.h). The rest of the cursor is
// in replay_cursor.cc.
#include <string>

#include "replay/replay_cursor.h"
#include "replay/trace_index_of.h"

namespace backstep::core {

Status ReplayCursor::LoadKeyframe(std::uint64_t k) {
  index_.RestoreKeyframe(k, regs_);
  const std::uint64_t p = k * index_.keyframe_interval();
  Status s = reader_->Seek(index_.KeyframeReaderPosition(k));
  if (!s.ok()) return s.Annotate("seeking to keyframe at position " + std::to_string(p));
  position_ = reader_at_ = p;
  event_at_ = kNoEvent;
  ClearJournal();
  pages_.Drop();
  return Status();
}

std::optional<std::pair<std::uint64_t, ReaderPosition>> ReplayCursor::ResetPointBetween(
    std::uint64_t from, std::uint64_t p) const {
  // With several threads, a clear of one thread's registers says nothing of
  // the others', which only a keyframe or a replay knows. Memory needs no
  // replay: pages are read from the index at the cursor's position.
  if (index_.thread_count() != 1) return std::nullopt;
  const std::optional<RegisterClearRecord> clear = index_.LastRegisterClearBefore(p);
  if (!clear || clear->event <= from) return std::nullopt;
  const std::optional<ReaderPosition> at = reader_->EventPosition(clear->event);
  if (!at) return std::nullopt;
  return std::pair(clear->event, *at);
}

Status ReplayCursor::LoadResetPoint(std::uint64_t event, const ReaderPosition& at) {
  // Whatever the registers were, event `event` clears them first.
  for (RegisterFile& file : regs_) file.Clear();
  Status s = reader_->Seek(at);
  if (!s.ok()) return s.Annotate("seeking to event " + std::to_string(event));
  position_ = reader_at_ = event;
  event_at_ = kNoEvent;
  ClearJournal();
  pages_.Drop();
  // The state before the clear is not known here: apply the clear without
  // journaling it, so that the journal (and backward steps) start after it.
  const bool journaling = journaling_;
  journaling_ = false;
  s = ApplyNext();
  journaling_ = journaling;
  return s;
}

Status ReplayCursor::Seek(Position target) {
  const std::uint64_t p = target.value, n = index_.event_count();
  if (p > n) {
    return Status::OutOfRange("seek to position " + std::to_string(p) + " past the end (" +
                              std::to_string(n) + ")");
  }
  if (p < position_ && p >= journal_.base()) {
    while (position_ > p) UndoLast();
    return Status();
  }
  // Replay from the latest of: here, keyframe p / interval, the last event
  // before p that clears the registers (every frame of a tfile: a jump to
  // frame 10^6 decodes that frame alone).
  const std::uint64_t interval = index_.keyframe_interval();
  const std::uint64_t keyframe = p / interval * interval;
  const bool from_here = position_ <= p && position_ >= keyframe;
  const auto reset = ResetPointBetween(from_here ? position_ : keyframe, p);
  if (reset) {
    journaling_ = false;
    BACKSTEP_RETURN_IF_ERROR(LoadResetPoint(reset->first, reset->second));
  } else if (!from_here) {
    journaling_ = false;
    BACKSTEP_RETURN_IF_ERROR(LoadKeyframe(p / interval));
  }
  while (position_ < p) BACKSTEP_RETURN_IF_ERROR(ApplyNext());
  return Status();
}

// Replays from the keyframe (or a later register clear) to `p` with undo
// information, so that the following backward steps are cheap.
Status ReplayCursor::SeekJournaled(std::uint64_t p) {
  journaling_ = true;
  const std::uint64_t interval = index_.keyframe_interval();
  if (const auto reset = ResetPointBetween(p / interval * interval, p)) {
    BACKSTEP_RETURN_IF_ERROR(LoadResetPoint(reset->first, reset->second));
  } else {
    BACKSTEP_RETURN_IF_ERROR(LoadKeyframe(p / interval));
  }
  journal_.set_recording_writes(false);  // the cache is empty: LoadPage records them if needed
  while (position_ < p) BACKSTEP_RETURN_IF_ERROR(ApplyNext());
  return Status();
}

}  // namespace backstep::core
