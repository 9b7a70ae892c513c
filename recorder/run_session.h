// RunSession: the part of a recording both engines share once their session
// is set up (recorder.cc's ptrace Session, emu/emu_recorder.cc's EmuSession):
// start, run to the end, and finish the sink in every case where the start
// succeeded, so that the trace is complete up to the last recorded
// instruction even when the run fails.
//
// Session needs Start() and Run() returning core::Status and result()
// returning the RecordResult.
#pragma once

#include "backstep/core/expected.h"
#include "recorder/recorder.h"
#include "recorder/recording_sink.h"

namespace backstep::record {

template <typename Session>
core::Expected<RecordResult> RunSession(Session& session, RecordingSink& sink) {
  if (core::Status s = session.Start(); !s.ok()) return s;
  core::Status run = session.Run();
  // A program that ran to its end (exit or a fatal signal): the sink marks
  // the trace complete.
  const bool ended = session.result().end == RecordResult::End::kExited ||
                     session.result().end == RecordResult::End::kKilled;
  if (run.ok() && session.result().end == RecordResult::End::kKilled) {
    sink.OnKilled(session.result().signal);
  }
  core::Status finish = sink.Finish(run.ok() && ended);
  if (!run.ok()) return run;
  if (!finish.ok()) return finish;
  return session.result();
}

}  // namespace backstep::record
