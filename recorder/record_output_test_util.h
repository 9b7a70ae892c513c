// Recording a test program whose standard output the test reads afterwards
// (recorder_test's programs print what they computed).
//
// Thread-safety: as Record().
#pragma once

#include <fcntl.h>
#include <unistd.h>

#include <string>

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

}  // namespace backstep::record::test_util
