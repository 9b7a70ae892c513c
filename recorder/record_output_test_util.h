// Recording a test program whose standard output the test reads afterwards
// (recorder_test's programs print what they computed).
//
// Thread-safety: as Record().
#pragma once

#include <fcntl.h>
#include <unistd.h>

#include <fstream>
#include <string>
#include <vector>

#include "backstep/core/expected.h"
#include "recorder/recorder.h"

namespace backstep::record::test_util {

// Record(options, sink) with the program's standard output in `out_path`
// (created or truncated); an IOError when it cannot be created.
inline core::Expected<RecordResult> RecordPrintingTo(RecordOptions options, RecordingSink& sink,
                                                     const std::string& out_path) {
  options.spawn.stdout_fd = open(out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (options.spawn.stdout_fd < 0) return core::Status::IOError("cannot create " + out_path);
  core::Expected<RecordResult> r = Record(options, sink);
  close(options.spawn.stdout_fd);
  return r;
}

// The program at `program` (a path) recorded whole by the ptrace engine
// into `sink`: the lines it printed. Errors: the recording's, an
// undecodable instruction, an end other than an exit. `result`, when
// given, gets the recording's result.
inline core::Expected<std::vector<std::string>> RecordedProgramsLines(
    const std::string& program, RecordingSink& sink, const std::string& out_path,
    RecordResult* result = nullptr) {
  RecordOptions options;
  options.spawn.argv = {program};
  core::Expected<RecordResult> r = RecordPrintingTo(options, sink, out_path);
  if (!r.ok()) return r.status();
  if (result) *result = *r;
  if (r->end != RecordResult::End::kExited)
    return core::Status::Unsupported(program + " did not exit normally");
  if (r->undecodable != 0)
    return core::Status::Unsupported(program + ": " + std::to_string(r->undecodable) +
                                     " undecodable instruction steps");
  std::ifstream printed(out_path);
  std::vector<std::string> lines;
  for (std::string line; std::getline(printed, line);) lines.push_back(line);
  return lines;
}

}  // namespace backstep::record::test_util
