#include "trace_target/exec_images.h"

#include <algorithm>

#include "backstep/gdbstub/process_image.h"

namespace backstep::gdbstub {

const std::vector<SignalStops::ExecPoint>& ExecImages::Execs() {
  static const std::vector<SignalStops::ExecPoint> kNone;
  if (!stops_.active()) return kNone;
  auto execs = stops_.Execs();
  // NOTE: an unreadable trace fails the resumes with its error; here it
  // only means "no other image".
  return execs.ok() ? **execs : kNone;
}

std::size_t ExecImages::ImageAt(core::Position p) {
  if (p.value == 0) return 0;  // no scan for the start, where clients connect
  const std::vector<SignalStops::ExecPoint>& execs = Execs();
  // Image i holds the positions after the i-th exec event.
  return static_cast<std::size_t>(
      std::lower_bound(execs.begin(), execs.end(), p.value,
                       [](const SignalStops::ExecPoint& e, std::uint64_t position) {
                         return e.event + 1 <= position;
                       }) -
      execs.begin());
}

std::string_view ExecImages::exe_path(std::size_t image) {
  if (image == 0) return first_.exe_path;
  const std::vector<SignalStops::ExecPoint>& execs = Execs();
  return image <= execs.size() ? std::string_view(execs[image - 1].path) : std::string_view();
}

std::span<const std::uint8_t> ExecImages::auxv(std::size_t image) {
  if (image == 0) return first_.auxv;
  auto it = auxv_.find(image);
  if (it == auxv_.end()) {
    const std::vector<SignalStops::ExecPoint>& execs = Execs();
    std::vector<std::uint8_t> read;
    if (image <= execs.size()) {
      auto recorded = RecordedAuxv(trace_, core::Position(execs[image - 1].event + 1));
      if (recorded.ok()) read = std::move(*recorded);
    }
    it = auxv_.emplace(image, std::move(read)).first;
  }
  return it->second;
}

core::Expected<std::optional<SignalStops::ExecPoint>> ExecImages::NextExec(std::uint64_t event) {
  if (!stops_.active()) return std::optional<SignalStops::ExecPoint>();
  BACKSTEP_ASSIGN_OR_RETURN(const std::vector<SignalStops::ExecPoint>* execs, stops_.Execs());
  auto it = std::lower_bound(
      execs->begin(), execs->end(), event,
      [](const SignalStops::ExecPoint& e, std::uint64_t at) { return e.event < at; });
  if (it == execs->end()) return std::optional<SignalStops::ExecPoint>();
  return std::optional<SignalStops::ExecPoint>(*it);
}

core::Expected<std::optional<SignalStops::ExecPoint>> ExecImages::PrevExec(std::uint64_t event) {
  if (!stops_.active()) return std::optional<SignalStops::ExecPoint>();
  BACKSTEP_ASSIGN_OR_RETURN(const std::vector<SignalStops::ExecPoint>* execs, stops_.Execs());
  auto it = std::lower_bound(
      execs->begin(), execs->end(), event,
      [](const SignalStops::ExecPoint& e, std::uint64_t at) { return e.event < at; });
  if (it == execs->begin()) return std::optional<SignalStops::ExecPoint>();
  return std::optional<SignalStops::ExecPoint>(*std::prev(it));
}

std::string_view ExecImages::PathBefore(const SignalStops::ExecPoint& exec) {
  return exe_path(ImageAt(core::Position(exec.event)));
}

}  // namespace backstep::gdbstub
