// RunSession: the part of a recording every engine shares once its session
// is set up (ptrace/ptrace_session.h's PtraceSession,
// emu/emu_session.h's EmuSession): start, run to the end, and finish the
// sink in every case where the start succeeded, so that the trace is
// complete up to the last recorded instruction even when the run fails.
// SpawnAndRun spawns the program (tracee.h) and runs a session on it.
//
// Session needs a constructor (options, extra..., sink, Tracee), Start()
// and Run() returning core::Status and result() returning the RecordResult.
#pragma once

#include <utility>

#include "backstep/core/expected.h"
#include "recorder/recorder.h"
#include "recorder/recording_sink.h"
#include "recorder/tracee.h"

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

template <typename Session, typename... Extra>
core::Expected<RecordResult> SpawnAndRun(const RecordOptions& options, RecordingSink& sink,
                                         const Extra&... extra) {
  core::Expected<Tracee> tracee = Tracee::Spawn(options.spawn);
  if (!tracee.ok()) return tracee.status();
  Session session(options, extra..., sink, std::move(*tracee));
  return RunSession(session, sink);
}

// How the program ended (`end`: its exit or fatal signal) into *result.
inline void SetProgramEnd(const Stop& end, RecordResult* result) {
  const bool exited = end.kind == Stop::kExited;
  result->end = exited ? RecordResult::End::kExited : RecordResult::End::kKilled;
  result->exit_code = end.exit_code;
  result->signal = end.signal;
}

}  // namespace backstep::record
