// backstep record [-o FILE] [--max-insns N] [--no-reads] [--follow parent|child]
//                 [--engine ptrace|emu|native] [--cpuid native|portable] [--no-vdso]
//                 [--log LOG] [--log-only] [--snapshot-ms N] [--snapshot-syscalls N]
//                 [--jobs N] [--crash-first] [--no-syscall-buffer] -- PROG [ARGS]
// backstep record --engine native --from-log LOG [-o FILE] [--jobs N] [--crash-first]
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <string>

#include "cli/cli.h"
#include "recorder/emu/emu_recorder.h"
#include "recorder/recorder.h"
#include "recorder/usercorn_sink.h"

namespace backstep::cli {
namespace {

std::string DefaultOutput(const std::string& program) {
  const std::size_t slash = program.rfind('/');
  return (slash == std::string::npos ? program : program.substr(slash + 1)) + ".ucir";
}

std::uint64_t FileSize(const std::string& path) {
  struct stat st {};
  return stat(path.c_str(), &st) == 0 ? static_cast<std::uint64_t>(st.st_size) : 0;
}

}  // namespace

int RunRecord(Args& args) {
  std::vector<std::string> command = args.TakeAfterSeparator();
  std::optional<std::string> max = args.TakeOption("max-insns");
  std::optional<std::string> output = args.TakeOption("output");
  const bool no_reads = args.TakeFlag("no-reads");
  std::optional<std::string> follow = args.TakeOption("follow");
  const bool reads = args.TakeFlag("reads");
  if (no_reads && reads) return Usage("record: --reads and --no-reads contradict each other");
  const std::string engine = args.TakeOption("engine").value_or("ptrace");
  std::optional<std::string> cpuid = args.TakeOption("cpuid");
  const bool no_vdso = args.TakeFlag("no-vdso");
  std::optional<std::string> log = args.TakeOption("log");  // --engine native
  std::optional<std::string> from_log = args.TakeOption("from-log");
  const bool log_only = args.TakeFlag("log-only");
  NativeCliOptions native;
  native.snapshot_ms = args.TakeOption("snapshot-ms");
  native.snapshot_syscalls = args.TakeOption("snapshot-syscalls");
  native.jobs = args.TakeOption("jobs");
  native.crash_first = args.TakeFlag("crash-first");
  native.no_syscall_buffer = args.TakeFlag("no-syscall-buffer");
  // `-o FILE` (one dash) is not an Args option: take it from the positionals.
  std::vector<std::string> rest = args.Positionals();
  if (!output && rest.size() == 2 && rest[0] == "-o") {
    output = rest[1];
    rest.clear();
  }
  if (std::optional<std::string> bad = args.UnknownOption()) {
    return Usage("record: unknown option '" + *bad + "'");
  }
  if (!rest.empty())
    return Usage("record: unexpected '" + rest[0] + "' (put the program after --)");
  // --engine native (cmd_record_native.cc): its own options.
  if (engine == "native") {
    if (max || no_reads || reads || follow || no_vdso || (cpuid && *cpuid == "native"))
      return Usage(
          "record: --engine native takes only -o, --cpuid portable, --log, --log-only, --from-log, "
          "--snapshot-ms, --snapshot-syscalls, --jobs, --crash-first and --no-syscall-buffer (no "
          "reads, no --max-insns, the parent only, the vDSO hidden)");
    if (from_log ? !command.empty() || log || log_only : command.empty())
      return Usage("record: --engine native wants -- PROG [ARGS] or --from-log LOG");
    return RunRecordNative(command,
                           output ? *output : DefaultOutput(from_log ? *from_log : command[0]),
                           cpuid == "portable", log, from_log, log_only, native);
  }
  if (log || from_log || log_only || native.snapshot_ms || native.snapshot_syscalls ||
      native.jobs || native.crash_first || native.no_syscall_buffer)
    return Usage(
        "record: --log, --log-only, --from-log, --snapshot-ms, --snapshot-syscalls, --jobs, "
        "--crash-first and --no-syscall-buffer are for --engine native");
  if (command.empty()) return Usage("record: no program (usage: record [-o FILE] -- PROG [ARGS])");
  if (engine != "ptrace" && engine != "emu")
    return Usage("record: --engine is ptrace, emu or native");
  if (cpuid && *cpuid != "native" && *cpuid != "portable")
    return Usage("record: --cpuid is native or portable");
  if (engine == "emu" && cpuid == "native")
    return Usage("record: --engine emu shows the program the portable CPUID only");
  if (engine == "emu" && reads)
    return Usage("record: --engine emu does not record reads yet (the ptrace engine does)");
  record::RecordOptions options;
  options.spawn.argv = command;
  // The emu engine records no reads: its trace must not declare them.
  options.reads = !no_reads && engine != "emu";
  if (follow && *follow != "parent" && *follow != "child")
    return Usage("record: --follow wants parent or child");
  if (follow && *follow == "child") options.follow = record::RecordOptions::Follow::kChild;
  options.portable_cpuid = engine == "emu" || cpuid == "portable";
  options.hide_vdso = engine == "emu" || no_vdso;
  if (max) {
    options.max_instructions = ParseNumber(*max);
    if (!options.max_instructions) return Usage("record: --max-insns wants a number");
  }
  const std::string path = output ? *output : DefaultOutput(command[0]);
  const bool tty = isatty(STDERR_FILENO);
  const auto start = std::chrono::steady_clock::now();
  auto last = start;
  options.progress = [&](std::uint64_t n) {
    const auto now = std::chrono::steady_clock::now();
    if (tty && now - last > std::chrono::milliseconds(200)) {
      last = now;
      const double secs = std::chrono::duration<double>(now - start).count();
      std::fprintf(stderr, "\rrecording: %llu instructions, %.0f/s ",
                   static_cast<unsigned long long>(n), secs > 0 ? n / secs : 0.0);
    }
    return !Interrupted();
  };
  core::Expected<std::unique_ptr<record::UsercornSink>> sink =
      record::UsercornSink::Create(path, options.reads);
  if (!sink.ok()) return Fail(sink.status());
  core::Expected<record::RecordResult> result =
      engine == "emu" ? record::RecordEmulated(options, **sink) : record::Record(options, **sink);
  if (tty) std::fputs("\r\033[K", stderr);
  if (!result.ok()) {
    Fail(result.status());
    if (FileSize(path) > 0) {
      std::fprintf(stderr, "backstep: %s holds the recording up to that point\n", path.c_str());
    }
    return 1;
  }
  const record::RecordResult& r = *result;
  const double secs =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const std::uint64_t bytes = FileSize(path);
  const char* why = "";
  switch (r.end) {
    case record::RecordResult::End::kExited:
      why = "program exited";
      break;
    case record::RecordResult::End::kKilled:
      why = "program killed by a signal";
      break;
    case record::RecordResult::End::kMaxInstructions:
      why = "--max-insns reached";
      break;
    case record::RecordResult::End::kInterrupted:
      why = "interrupted";
      break;
  }
  // The summary goes to stderr: stdout is the program's.
  std::fprintf(stderr, "%s: %llu instructions, %llu syscalls (%s", path.c_str(),
               static_cast<unsigned long long>(r.instructions),
               static_cast<unsigned long long>(r.syscalls), why);
  if (r.end == record::RecordResult::End::kExited) std::fprintf(stderr, ", status %d", r.exit_code);
  if (r.end == record::RecordResult::End::kKilled) std::fprintf(stderr, ", signal %d", r.signal);
  std::fprintf(stderr, "); %llu bytes, %.1f bytes/instruction, %.0f instructions/s\n",
               static_cast<unsigned long long>(bytes),
               r.instructions ? static_cast<double>(bytes) / r.instructions : 0.0,
               secs > 0 ? r.instructions / secs : 0.0);
  if (r.missed_bytes || r.missed_registers) {
    std::fprintf(stderr,
                 "backstep: warning: the consistency check found %llu bytes and %llu registers "
                 "the decoder missed (recorded late); please report the program\n",
                 static_cast<unsigned long long>(r.missed_bytes),
                 static_cast<unsigned long long>(r.missed_registers));
  }
  if (r.undecodable) {
    std::fprintf(stderr,
                 "backstep: warning: %llu instruction steps could not be decoded: their reads are "
                 "not in the trace (their writes are, found by comparing memory); please report "
                 "the program\n",
                 static_cast<unsigned long long>(r.undecodable));
  }
  if (r.unbounded_reads) {
    std::fprintf(stderr,
                 "backstep: warning: %llu instruction steps read memory the decoder cannot "
                 "bound: their reads are not in the trace; please report the program\n",
                 static_cast<unsigned long long>(r.unbounded_reads));
  }
  // The program's status, as a shell reports it (as `rr record` does), so
  // that scripts see its failure.
  if (r.end == record::RecordResult::End::kExited) return r.exit_code;
  if (r.end == record::RecordResult::End::kKilled) return 128 + r.signal;
  return 0;
}

}  // namespace backstep::cli
