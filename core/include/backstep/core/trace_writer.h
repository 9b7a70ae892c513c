// TraceWriter: writes a trace in one format from canonical events.
//
// Writers produce test fixtures, power `backstep convert`, and prove each
// reader against its spec. A writer writes to a temporary file next to the
// destination and renames it on Finish(): a crash or a full disk never
// leaves a half file under the final name.
//
// Protocol: Begin() once, Append() per event in order, Finish() once. A
// writer destroyed without Finish() removes its temporary file.
//
// Thread-safety: one thread at a time.
#pragma once

#include <functional>
#include <span>
#include <string_view>
#include <utility>
#include <vector>

#include "backstep/core/event.h"
#include "backstep/core/expected.h"
#include "backstep/core/progress.h"
#include "backstep/core/status.h"
#include "backstep/core/trace_reader.h"

namespace backstep::core {

// Reads initial memory for a writer (same contract as
// TraceReader::ReadInitialMemory).
using InitialMemoryFn =
    std::function<void(Address, std::span<std::uint8_t> out, std::span<std::uint8_t> known)>;

class TraceWriter {
 public:
  virtual ~TraceWriter() = default;
  // Writes the header and initial state. A format that cannot express the
  // header (another architecture, unknown memory) returns Unsupported.
  virtual Status Begin(const TraceHeader& header,
                       const std::vector<std::pair<ThreadId, RegisterFile>>& initial_registers,
                       const InitialMemoryFn& initial_memory) = 0;
  virtual Status Append(const Event& event) = 0;
  // Completes the file and renames it into place.
  virtual Status Finish() = 0;
  // Whether the format stores the values of recorded reads. A format that
  // stores only their addresses and sizes (usercorn's MEM_READ) also takes
  // the reads of a source whose read values are placeholders.
  virtual bool StoresReadValues() const { return true; }
};

// Streams every event of `in` (from its current position) into `out`:
// Begin, Append per event, Finish. Returns the number of events written.
// `progress` (optional) is called with phase "converting" every 65536 events
// and at the end; returning false stops with Interrupted, and `out`, never
// finished, leaves nothing behind. Errors of `in` are returned as they are
// (they name the input); errors of `out` are annotated with `out_name`.
Expected<std::uint64_t> ConvertTrace(TraceReader& in, TraceWriter& out, std::string_view out_name,
                                     const ProgressFn& progress = {});

}  // namespace backstep::core
