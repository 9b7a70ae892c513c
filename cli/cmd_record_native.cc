// backstep record --engine native [-o FILE] [--cpuid portable] [--log LOG] [--log-only]
//                 -- PROG [ARGS]
// backstep record --engine native --from-log LOG [-o FILE]
//
// The two phases of the native engine (recorder/native/): the program runs
// natively and its log is written (LOG, default FILE.nlog, kept), then the
// log is materialized into the trace FILE by the emu engine. --from-log
// materializes a kept log again (same machine, directory and environment);
// --log-only stops after the record phase.
#include <sys/stat.h>

#include <chrono>
#include <cstdio>
#include <string>

#include "cli/cli.h"
#include "recorder/native/materialize.h"
#include "recorder/native/native_recorder.h"
#include "recorder/usercorn_sink.h"

namespace backstep::cli {
namespace {

double SecondsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace

int RunRecordNative(const std::vector<std::string>& command, const std::string& path,
                    bool portable_cpuid, const std::optional<std::string>& log,
                    const std::optional<std::string>& from_log, bool log_only) {
  const std::string log_path = from_log ? *from_log : log ? *log : path + ".nlog";
  int program_status = 0;  // as a shell reports it
  if (!from_log) {
    record::NativeOptions options;
    options.spawn.argv = command;
    options.portable_cpuid = portable_cpuid;
    const auto start = std::chrono::steady_clock::now();
    core::Expected<record::NativeResult> r = record::RecordNative(options, log_path);
    if (!r.ok()) return Fail(r.status());
    program_status = r->end == record::NativeLog::End::kExited ? r->status : 128 + r->status;
    std::fprintf(
        stderr,
        "%s: record phase %.3f s (%llu system calls, %llu rdtsc, %llu held signals; "
        "CPUID %s)\n",
        log_path.c_str(), SecondsSince(start), static_cast<unsigned long long>(r->syscalls),
        static_cast<unsigned long long>(r->rdtsc), static_cast<unsigned long long>(r->held_signals),
        r->cpuid == record::NativeLog::Cpuid::kPortable ? "portable (faulting)"
                                                        : "of this CPU (no faulting)");
  }
  if (log_only) return program_status;
  core::Expected<record::NativeLog> native_log = record::ReadNativeLog(log_path);
  if (!native_log.ok()) return Fail(native_log.status());
  core::Expected<std::unique_ptr<record::UsercornSink>> sink =
      record::UsercornSink::Create(path, false);
  if (!sink.ok()) return Fail(sink.status());
  const auto start = std::chrono::steady_clock::now();
  core::Expected<record::RecordResult> m = record::Materialize(*native_log, **sink);
  if (!m.ok()) {
    Fail(m.status());
    std::fprintf(stderr, "backstep: %s holds the trace up to that point\n", path.c_str());
    return 1;
  }
  const double secs = SecondsSince(start);
  struct stat st {};
  stat(path.c_str(), &st);
  std::fprintf(stderr,
               "%s: materialized %llu instructions, %llu syscalls in %.3f s (%.0f "
               "instructions/s); %lld bytes\n",
               path.c_str(), static_cast<unsigned long long>(m->instructions),
               static_cast<unsigned long long>(m->syscalls), secs,
               secs > 0 ? m->instructions / secs : 0.0, static_cast<long long>(st.st_size));
  // The program's status, as `record` with the other engines.
  if (m->end == record::RecordResult::End::kExited) return m->exit_code;
  if (m->end == record::RecordResult::End::kKilled) return 128 + m->signal;
  return 0;
}

}  // namespace backstep::cli
