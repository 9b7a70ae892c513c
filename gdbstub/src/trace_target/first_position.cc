#include "trace_target/first_position.h"

#include <algorithm>
#include <string>

namespace backstep::gdbstub {

core::Expected<core::Position> FirstPositionWithPc(const core::Trace& trace, core::Cursor& cursor) {
  const std::uint64_t end = trace.event_count();
  const std::uint64_t last = std::min(end, kMaxStartScan);
  for (std::uint64_t p = cursor.position().value; p <= last; ++p) {
    if (cursor.position().value != p) BACKSTEP_RETURN_IF_ERROR(cursor.StepForward());
    if (cursor.Pc(cursor.current_thread())) return cursor.position();
  }
  const std::string scanned = last == end
                                  ? "no position of the trace"
                                  : "none of the first " + std::to_string(last + 1) + " positions";
  return core::Status::NotFound(trace.path() + ": " + scanned +
                                " has a known pc; gdb and LLDB need one to show a stop");
}

core::Expected<core::Position> LastPositionWithPc(const core::Trace& trace, core::Cursor& cursor,
                                                  core::Position first) {
  const core::Position end(trace.event_count());
  BACKSTEP_RETURN_IF_ERROR(cursor.Seek(end));
  for (std::uint64_t n = 0; n < kMaxStartScan && cursor.position() > first; ++n) {
    if (cursor.Pc(cursor.current_thread())) return cursor.position();
    BACKSTEP_RETURN_IF_ERROR(cursor.StepBackward());
  }
  return cursor.position() > first ? end : first;
}

}  // namespace backstep::gdbstub
