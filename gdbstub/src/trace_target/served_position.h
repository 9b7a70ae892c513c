// ServedPosition: where a TraceTarget's client is, shared by its capability
// objects (stop points, trace frames, armed moves, monitor commands, the
// memory map, the host files).
//
// It owns the cursor at the current position (run control moves it), the
// first and last positions of the served history (first_position.h), the
// thread that stopped last, and the trace frame `tfind` selected: while a
// frame is selected, view() is a second cursor at that frame, and every
// register and memory read answers from there.
//
// current_thread() is the thread that stopped (the stepped thread, the
// breakpoint's thread, the watched write's thread) while it exists at the
// position; otherwise the thread of the next event (see trace_target.h).
//
// Thread-safety: one thread at a time (the owning TraceTarget's).
#pragma once

#include <memory>
#include <optional>
#include <vector>

#include "backstep/core/cursor.h"
#include "backstep/core/trace.h"

namespace backstep::gdbstub {

class ServedPosition {
 public:
  // `cursor` is at `first`; first <= last.
  ServedPosition(std::shared_ptr<const core::Trace> trace, std::unique_ptr<core::Cursor> cursor,
                 core::Position first, core::Position last);

  // ---- The current position (moved by run control only).
  core::Cursor& cursor() { return *cursor_; }
  core::Position position() const { return cursor_->position(); }
  // The first position whose pc is known: where the target starts and the
  // beginning of the history it serves.
  core::Position first() const { return first_; }
  // The last position whose pc is known: where the served history ends.
  core::Position last() const { return last_; }
  // The thread the last stop reported (nullopt: none; see current_thread()).
  std::optional<core::ThreadId> stop_thread() const { return stop_thread_; }
  void set_stop_thread(std::optional<core::ThreadId> thread) { stop_thread_ = thread; }

  // ---- The selected trace frame (QTFrame).
  // The cursor reads answer from: the selected frame's, else the current one.
  core::Cursor& view() { return frame_selected_ ? *frame_cursor_ : *cursor_; }
  bool frame_selected() const { return frame_selected_; }
  // REQUIRES: frame_selected().
  core::Position selected_position() const { return selected_position_; }
  // The frame cursor (created the first time), for searches that move it;
  // RestoreFrame() puts it back on the selected frame afterwards.
  core::Expected<core::Cursor*> FrameCursor();
  // Selects the frame at `p` (view() answers there).
  core::Status SelectFrameAt(core::Position p);
  void DeselectFrame() { frame_selected_ = false; }
  // After a search moved FrameCursor(): back to the selected frame (a seek
  // error deselects it).
  void RestoreFrame();

  // ---- Threads (every thread of the trace, at every position).
  // Sorted; computed once (HasThread runs for every register packet).
  const std::vector<core::ThreadId>& threads();
  bool HasThread(core::ThreadId thread);
  core::ThreadId current_thread();

 private:
  std::shared_ptr<const core::Trace> trace_;
  std::unique_ptr<core::Cursor> cursor_;
  core::Position first_;  // history begins here for the client
  core::Position last_;   // and ends here
  std::optional<core::ThreadId> stop_thread_;
  std::unique_ptr<core::Cursor> frame_cursor_;  // created by the first FrameCursor()
  bool frame_selected_ = false;
  core::Position selected_position_;  // of frame_cursor_ while selected
  std::vector<core::ThreadId> threads_;
};

}  // namespace backstep::gdbstub
