#include "transport/watched_target.h"

namespace backstep::gdbstub {

core::Expected<StopReason> WatchedTarget::Resume(ResumeKind kind,
                                                 std::optional<core::ThreadId> thread,
                                                 const std::atomic<bool>* interrupt) {
  if (kind == ResumeKind::kStep) return inner_.Resume(kind, thread, interrupt);
  return watcher_.RunWatched([&] { return inner_.Resume(kind, thread, interrupt); });
}

core::Expected<StopReason> WatchedTarget::ResumeBackward(ResumeKind kind,
                                                         std::optional<core::ThreadId> thread,
                                                         const std::atomic<bool>* interrupt) {
  ReverseExecution* reverse = inner_.reverse_execution();
  if (kind == ResumeKind::kStep) return reverse->ResumeBackward(kind, thread, interrupt);
  return watcher_.RunWatched([&] { return reverse->ResumeBackward(kind, thread, interrupt); });
}

core::Expected<StopReason> WatchedTarget::RangeStep(core::Address start, core::Address end,
                                                    std::optional<core::ThreadId> thread,
                                                    const std::atomic<bool>* interrupt) {
  RangeStepping* range = inner_.range_stepping();
  return watcher_.RunWatched([&] { return range->RangeStep(start, end, thread, interrupt); });
}

}  // namespace backstep::gdbstub
