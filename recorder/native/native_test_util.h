// What the native engine's tests (native_recorder_test.cc,
// native_crosscheck_test.cc) share: a native recording made in a new PID
// namespace (the program is pid 2, as in the other engines' runs it is
// compared with: pid_namespace_test_util.h) and the materialization of a
// log into a UCIR file.
#pragma once

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sched.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "recorder/native/materialize.h"
#include "recorder/native/native_recorder.h"
#include "recorder/native/tsc_faulting.h"
#include "recorder/pid_namespace_test_util.h"
#include "recorder/usercorn_sink.h"

// Skips the calling test for a dynamically linked test program (a name
// ending in "_pie") on a machine where rdtsc does not fault: ld.so reads the
// time stamp counter, which the native engine cannot log there
// (tsc_faulting.h), so materializing its recording diverges by design
// (NativeRdtsc checks that it says why).
#define BACKSTEP_SKIP_PIE_WITHOUT_RDTSC_FAULTING(program)                                   \
  do {                                                                                      \
    if (std::string(program).ends_with("_pie") && !::backstep::record::RdtscFaults()) {     \
      GTEST_SKIP() << "rdtsc does not fault on this machine: the native engine cannot log " \
                      "ld.so's reads of the time stamp counter";                            \
    }                                                                                       \
  } while (0)

namespace backstep::record::test_util {

// Runs `body` in a child process whose children live in a new PID
// namespace (the program it records is pid 2); its error message, "" if
// none.
inline std::string InNewPidNamespace(const std::function<std::string()>& body) {
  int fds[2];
  if (pipe(fds) != 0) return "pipe failed";
  const pid_t worker = fork();
  if (worker < 0) return "fork failed";
  if (worker == 0) {
    close(fds[0]);
    pid_t init = -1;
    std::string error = EnterNewPidNamespace(&init);
    if (error.empty()) error = body();
    EndPidNamespace(init);
    if (error.empty()) error = "ok";
    [[maybe_unused]] ssize_t w = write(fds[1], error.data(), error.size());
    _exit(0);
  }
  close(fds[1]);
  std::string out;
  char buf[512];
  for (ssize_t n; (n = read(fds[0], buf, sizeof buf)) > 0;) out.append(buf, n);
  close(fds[0]);
  int status = 0;
  waitpid(worker, &status, 0);
  if (out.empty()) return "the recording process died (status " + std::to_string(status) + ")";
  return out == "ok" ? "" : out;
}

// Records `argv` natively into `log_path` with `options` (its argv, stdout
// and stderr set here: /dev/null), the error message, "" if none.
inline std::string RecordNativeLog(const std::vector<std::string>& argv,
                                   const std::string& log_path, NativeOptions options = {}) {
  return InNewPidNamespace([&]() -> std::string {
    options.spawn.argv = argv;
    options.spawn.stdout_fd = open("/dev/null", O_WRONLY);
    options.spawn.stderr_fd = open("/dev/null", O_WRONLY);
    core::Expected<NativeResult> r = RecordNative(options, log_path);
    return r.ok() ? "" : "native: " + r.status().message();
  });
}

inline core::Expected<RecordResult> MaterializeTo(const NativeLog& log, const std::string& trace,
                                                  const MaterializeOptions& options = {}) {
  auto sink = UsercornSink::Create(trace, false);
  if (!sink.ok()) return sink.status();
  return Materialize(log, **sink, options);
}

}  // namespace backstep::record::test_util
