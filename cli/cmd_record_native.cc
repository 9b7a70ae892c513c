// backstep record --engine native [-o FILE] [--cpuid portable] [--log LOG] [--log-only]
//                 [--snapshot-ms N] [--snapshot-syscalls N] [--jobs N] [--crash-first]
//                 [--no-syscall-buffer] -- PROG [ARGS]
// backstep record --engine native --from-log LOG [-o FILE] [--jobs N] [--crash-first]
//
// The two phases of the native engine (recorder/native/): the program runs
// natively and its log is written (LOG, default FILE.nlog, kept), then the
// log is materialized into the trace FILE by the emu engine. --from-log
// materializes a kept log again (same machine, directory and environment);
// --log-only stops after the record phase. Snapshots (every
// kDefaultSnapshotMs unless told) cut the run into intervals that
// materialize --jobs at a time (default: every CPU); --crash-first
// materializes the last one first, alone into FILE.last.ucir, servable
// while the others go on.
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <string>

#include "cli/cli.h"
#include "recorder/native/materialize.h"
#include "recorder/native/native_recorder.h"
#include "recorder/native/tsc_faulting.h"
#include "recorder/usercorn_sink.h"

namespace backstep::cli {
namespace {

// Snapshots every 10 ms of the program's native run by default: about 10-20
// s of emulation per interval at 1.5M instructions/s, a few hundred KiB to
// a few MiB each (the program's image).
constexpr std::uint64_t kDefaultSnapshotMs = 10;

double SecondsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace

int RunRecordNative(const std::vector<std::string>& command, const std::string& path,
                    bool portable_cpuid, const std::optional<std::string>& log,
                    const std::optional<std::string>& from_log, bool log_only,
                    const NativeCliOptions& native) {
  const std::string log_path = from_log ? *from_log : log ? *log : path + ".nlog";
  std::optional<std::uint64_t> snapshot_ms = kDefaultSnapshotMs, snapshot_syscalls = 0;
  if (native.snapshot_ms) snapshot_ms = ParseNumber(*native.snapshot_ms);
  if (native.snapshot_syscalls) snapshot_syscalls = ParseNumber(*native.snapshot_syscalls);
  if (!snapshot_ms || !snapshot_syscalls)
    return Usage("record: --snapshot-ms and --snapshot-syscalls want a number (0: none)");
  if (native.snapshot_syscalls && !native.snapshot_ms) snapshot_ms = 0;  // by count only
  if (from_log && (native.snapshot_ms || native.snapshot_syscalls || native.no_syscall_buffer))
    return Usage(
        "record: --from-log materializes the log as recorded (no --snapshot-* or "
        "--no-syscall-buffer)");
  record::MaterializeOptions materialize;
  const long cpus = sysconf(_SC_NPROCESSORS_ONLN);
  materialize.jobs = cpus > 0 ? static_cast<unsigned>(cpus) : 1;
  if (native.jobs) {
    const std::optional<std::uint64_t> jobs = ParseNumber(*native.jobs);
    if (!jobs || *jobs == 0 || *jobs > 1024) return Usage("record: --jobs wants 1 to 1024");
    materialize.jobs = static_cast<unsigned>(*jobs);
  }
  int program_status = 0;  // as a shell reports it
  if (!from_log) {
    if (!record::RdtscFaults()) {
      std::fprintf(stderr, "backstep: warning: %s\n", record::RdtscNotFaultingHint());
    }
    record::NativeOptions options;
    options.spawn.argv = command;
    options.portable_cpuid = portable_cpuid;
    options.snapshot_ms = *snapshot_ms;
    options.snapshot_syscalls = *snapshot_syscalls;
    options.syscall_buffer = !native.no_syscall_buffer;
    const auto start = std::chrono::steady_clock::now();
    core::Expected<record::NativeResult> r = record::RecordNative(options, log_path);
    if (!r.ok()) return Fail(r.status());
    program_status = r->end == record::NativeLog::End::kExited ? r->status : 128 + r->status;
    std::fprintf(
        stderr,
        "%s: record phase %.3f s (%llu system calls, %llu buffered at %llu sites, %llu rdtsc, "
        "%llu held signals, "
        "%llu snapshots of %llu bytes; CPUID %s)\n",
        log_path.c_str(), SecondsSince(start), static_cast<unsigned long long>(r->syscalls),
        static_cast<unsigned long long>(r->buffered),
        static_cast<unsigned long long>(r->patched_sites),
        static_cast<unsigned long long>(r->rdtsc), static_cast<unsigned long long>(r->held_signals),
        static_cast<unsigned long long>(r->snapshots),
        static_cast<unsigned long long>(r->snapshot_bytes),
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
  if (native.crash_first) {
    materialize.tail_path = path + ".last.ucir";
    materialize.on_tail = [&] {
      std::fprintf(stderr,
                   "%s: the last interval (from the last snapshot to the end) in %.3f s; serve "
                   "it now: backstep serve %s\n",
                   materialize.tail_path.c_str(), SecondsSince(start),
                   materialize.tail_path.c_str());
    };
  }
  core::Expected<record::RecordResult> m = record::Materialize(*native_log, **sink, materialize);
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
               "instructions/s; %zu intervals, %u jobs); %lld bytes\n",
               path.c_str(), static_cast<unsigned long long>(m->instructions),
               static_cast<unsigned long long>(m->syscalls), secs,
               secs > 0 ? m->instructions / secs : 0.0, native_log->snapshots.size() + 1,
               materialize.jobs, static_cast<long long>(st.st_size));
  // The program's status, as `record` with the other engines.
  if (m->end == record::RecordResult::End::kExited) return m->exit_code;
  if (m->end == record::RecordResult::End::kKilled) return 128 + m->signal;
  return 0;
}

}  // namespace backstep::cli
