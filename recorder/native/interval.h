// The intervals of a native recording (materialize.h): between two
// snapshots (snapshot.h), or from exec to the first, or from the last to
// the end. Materialization internals, shared by materialize.cc (one
// interval in this process) and materialize_intervals.cc (every interval,
// each in its own process, joined into one trace).
//
// Thread-safety: as Materialize.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "backstep/core/expected.h"
#include "recorder/native/materialize.h"
#include "recorder/native/snapshot.h"

namespace backstep::record {

struct Interval {
  std::size_t first = 0, limit = 0;    // the log's system calls [first, limit)
  std::uint64_t rdtsc = 0;             // the log's rdtsc values before it
  const Snapshot* snapshot = nullptr;  // null: from exec
  bool last = false;                   // runs to the program's end
  std::string where;                   // for messages: " of interval 3 (...)"
  // Set in a single pass over a log with snapshots: called right after
  // each system call a snapshot follows, where the intervals' parts meet
  // (UsercornSink::Cut). Unset in a worker: its interval's end is its
  // part's end.
  std::function<void()> cut;
};

// Materializes `interval` into `sink` (which gets OnStart, the interval's
// events and Finish); *positions (if given): the positions it sent, also
// on an error.
core::Expected<RecordResult> MaterializeInterval(const NativeLog& log, const Interval& interval,
                                                 RecordingSink& sink, std::uint64_t* positions);

// Every interval of `log` (it has snapshots), in parallel, joined into `sink`.
core::Expected<RecordResult> MaterializeIntervals(const NativeLog& log, UsercornSink& sink,
                                                  const MaterializeOptions& options);

}  // namespace backstep::record
