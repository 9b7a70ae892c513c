// ExecImages: the images of a trace that records execve (a usercorn
// recording across exec, docs/formats/usercorn.md), for the answers that
// depend on which program runs at the position: the executable's path
// (qXfer:exec-file), the auxiliary vector (qXfer:auxv, and through it
// qXfer:libraries-svr4), and where run control reports an exec.
//
// Image 0 runs from the start to the first exec event e (positions <= e);
// image i from position e_i + 1, the state after the i-th exec, whose
// initial stack holds that image's auxv. Image 0's path and auxv are the
// serve options' (the recorded ones, or --exe's); image i's path is the
// exec event's note, its auxv the one read at e_i + 1 (empty when that
// fails). The exec events come from SignalStops' slots (the index's list
// of noted events), read only once a position past the first is asked about.
//
// Thread-safety: one thread at a time (the owning TraceTarget's).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <string_view>
#include <vector>

#include "backstep/core/expected.h"
#include "backstep/core/trace.h"
#include "backstep/gdbstub/trace_target.h"
#include "trace_target/signal_stops.h"

namespace backstep::gdbstub {

class ExecImages {
 public:
  // All must outlive the object.
  ExecImages(const core::Trace& trace, SignalStops& stops, const TraceTargetOptions& first)
      : trace_(trace), stops_(stops), first_(first) {}

  // The image at position `p` (0 when the trace holds no exec, or on error).
  std::size_t ImageAt(core::Position p);
  std::string_view exe_path(std::size_t image);
  std::span<const std::uint8_t> auxv(std::size_t image);

  // The first exec event at or after `event` (a forward move from position
  // `event` crosses it), or nullopt.
  core::Expected<std::optional<SignalStops::ExecPoint>> NextExec(std::uint64_t event);
  // The last exec event before `event` (a backward move from position
  // `event` crosses it), or nullopt.
  core::Expected<std::optional<SignalStops::ExecPoint>> PrevExec(std::uint64_t event);
  // The executable of the image that an exec event ends (the one before it).
  std::string_view PathBefore(const SignalStops::ExecPoint& exec);

 private:
  // The exec events, or none when the trace cannot have any.
  const std::vector<SignalStops::ExecPoint>& Execs();

  const core::Trace& trace_;
  SignalStops& stops_;
  const TraceTargetOptions& first_;
  std::map<std::size_t, std::vector<std::uint8_t>> auxv_;  // by image > 0
};

}  // namespace backstep::gdbstub
