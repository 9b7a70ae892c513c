// ResumeRunner: how a session runs a resume that may take long.
//
// Steps are bounded (an index lookup plus a replay within one keyframe
// interval) and run inline. A continue (`c`, `bc`, vCont with `c`, both
// directions) or a range step (vCont;r: a loop within one line) may scan the
// whole trace: the session hands those to the runner it was given, so that
// the transport can keep watching its client meanwhile and turn a 0x03 into
// Session::RequestInterrupt() (docs/protocol.md §6.8). Without a runner (unit
// tests, fuzzers) they run inline like steps.
//
// Contract: Run() calls `resume` exactly once, on any thread, returns its
// result, and returns only after `resume` has returned; the session's thread
// waits meanwhile, so the Target is still called by one thread at a time.
//
// Thread-safety: Run() is called from the session's thread.
#pragma once

#include <functional>

#include "backstep/core/expected.h"
#include "backstep/gdbstub/stop_reason.h"

namespace backstep::gdbstub {

class ResumeRunner {
 public:
  using Resume = std::function<core::Expected<StopReason>()>;

  virtual ~ResumeRunner() = default;
  virtual core::Expected<StopReason> Run(const Resume& resume) = 0;
};

}  // namespace backstep::gdbstub
