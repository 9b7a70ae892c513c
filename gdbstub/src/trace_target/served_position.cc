#include "trace_target/served_position.h"

#include <algorithm>

namespace backstep::gdbstub {

ServedPosition::ServedPosition(std::shared_ptr<const core::Trace> trace,
                               std::unique_ptr<core::Cursor> cursor, core::Position first,
                               core::Position last)
    : trace_(std::move(trace)), cursor_(std::move(cursor)), first_(first), last_(last) {}

core::Expected<core::Cursor*> ServedPosition::FrameCursor() {
  if (!frame_cursor_) {
    BACKSTEP_ASSIGN_OR_RETURN(frame_cursor_, trace_->NewCursor());
  }
  return frame_cursor_.get();
}

core::Status ServedPosition::SelectFrameAt(core::Position p) {
  BACKSTEP_ASSIGN_OR_RETURN(core::Cursor * cursor, FrameCursor());
  selected_position_ = p;
  BACKSTEP_RETURN_IF_ERROR(cursor->Seek(selected_position_));
  frame_selected_ = true;
  return core::Status::Ok();
}

void ServedPosition::RestoreFrame() {
  if (frame_selected_ && !frame_cursor_->Seek(selected_position_).ok()) frame_selected_ = false;
}

// NOTE: every thread of the trace, at every position (issue 10): a thread
// whose first event is still ahead is listed with its registers unknown
// (gdb shows them <unavailable>), so `info threads` and `thread N` work
// anywhere and a thread that appears later is not reported as new.
const std::vector<core::ThreadId>& ServedPosition::threads() {
  if (threads_.empty()) {
    threads_ = trace_->threads();
    std::sort(threads_.begin(), threads_.end());
  }
  return threads_;
}

bool ServedPosition::HasThread(core::ThreadId thread) {
  const std::vector<core::ThreadId>& sorted = threads();
  return std::binary_search(sorted.begin(), sorted.end(), thread);
}

core::ThreadId ServedPosition::current_thread() {
  if (!frame_selected_ && stop_thread_ && HasThread(*stop_thread_)) return *stop_thread_;
  // NOTE: the thread of the next event, unless that event creates it (its
  // pc is still unknown): then one that has a pc, so that a goto to a
  // thread's creation shows no made-up pc (LLDB fills unknown bytes with
  // 0xcc) and a reverse step from there steps a real thread.
  const core::ThreadId next = view().current_thread();
  if (view().Pc(next)) return next;
  for (core::ThreadId thread : threads()) {
    if (view().Pc(thread)) return thread;
  }
  return next;
}

}  // namespace backstep::gdbstub
