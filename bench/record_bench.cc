// record_bench: `backstep record`'s rate per engine (ptrace, emu), next to
// a bare PTRACE_SINGLESTEP loop over the same program, in the same run, and
// the bytes each engine writes per instruction.
//
//   record_bench [--ptrace-max N] [PROGRAM...]
//       (default: record_compute, record_syscalls and two test programs)
//
// Per program: bare stepping (fork, exec, single-step, nothing else), then
// per engine (both with --cpuid portable) recording into a sink that drops
// everything (the engine's own cost) and into a UCIR file (plus the
// writer's cost). The ptrace engine and bare stepping stop after
// --ptrace-max instructions (default 300000: ~6 s at ptrace rates); the
// emu engine records the whole program. "x ptrace" is the emu engine's UCIR
// rate over the ptrace engine's.
#include <fcntl.h>
#include <sys/personality.h>
#include <sys/ptrace.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "recorder/emu/emu_recorder.h"
#include "recorder/recorder.h"
#include "recorder/usercorn_sink.h"

namespace {

using Clock = std::chrono::steady_clock;
using backstep::record::RecordingSink;

double Seconds(Clock::time_point since) {
  return std::chrono::duration<double>(Clock::now() - since).count();
}

// Bare single-stepping: the floor any ptrace recorder sits on.
std::uint64_t BareSteps(const std::string& path, std::uint64_t max, double* secs) {
  const auto start = Clock::now();
  const pid_t pid = fork();
  if (pid == 0) {
    const int null = open("/dev/null", O_WRONLY);
    dup2(null, 1);
    personality(ADDR_NO_RANDOMIZE);
    ptrace(PTRACE_TRACEME, 0, nullptr, nullptr);
    execl(path.c_str(), path.c_str(), nullptr);
    _exit(127);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  std::uint64_t steps = 0;
  while (steps < max) {
    ptrace(PTRACE_SINGLESTEP, pid, nullptr, 0);
    waitpid(pid, &status, 0);
    if (WIFEXITED(status) || WIFSIGNALED(status)) break;
    ++steps;
  }
  if (steps == max) {
    kill(pid, SIGKILL);
    waitpid(pid, &status, 0);
  }
  *secs = Seconds(start);
  return steps;
}

struct NullSink : RecordingSink {
  backstep::core::Status OnStart(const backstep::record::StartInfo&) override { return {}; }
  void OnInstruction(const backstep::record::InstructionRecord&) override {}
  void OnSyscall(const backstep::record::SyscallRecord&) override {}
  backstep::core::Status Finish(bool) override { return {}; }
};

bool Record(bool emu, const std::string& path, std::uint64_t max, RecordingSink& sink,
            std::uint64_t* insns, double* secs) {
  backstep::record::RecordOptions options;
  options.spawn.argv = {path};
  options.spawn.stdout_fd = open("/dev/null", O_WRONLY);
  options.check_interval = 0;
  options.portable_cpuid = true;
  if (!emu) options.max_instructions = max;
  const auto start = Clock::now();
  auto r = emu ? backstep::record::RecordEmulated(options, sink)
               : backstep::record::Record(options, sink);
  *secs = Seconds(start);
  close(options.spawn.stdout_fd);
  if (!r.ok()) {
    std::fprintf(stderr, "%s (%s): %s\n", path.c_str(), emu ? "emu" : "ptrace",
                 r.status().message().c_str());
    return false;
  }
  *insns = r->instructions;
  return true;
}

struct Row {
  std::uint64_t insns = 0;
  double null_rate = 0, file_rate = 0, bytes_per_insn = 0;
};

bool Measure(bool emu, const std::string& path, std::uint64_t max, Row* row) {
  double null_secs = 0, file_secs = 0;
  std::uint64_t null_insns = 0;
  NullSink null_sink;
  if (!Record(emu, path, max, null_sink, &null_insns, &null_secs)) return false;
  const std::string out = "/tmp/record_bench_" + std::to_string(getpid()) + ".ucir";
  auto sink = backstep::record::UsercornSink::Create(out);
  if (!sink.ok() || !Record(emu, path, max, **sink, &row->insns, &file_secs)) return false;
  struct stat st {};
  stat(out.c_str(), &st);
  unlink(out.c_str());
  row->null_rate = null_insns / null_secs;
  row->file_rate = row->insns / file_secs;
  row->bytes_per_insn = static_cast<double>(st.st_size) / row->insns;
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  std::uint64_t max = 300000;
  std::vector<std::string> programs;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--ptrace-max") == 0 && i + 1 < argc) {
      max = std::strtoull(argv[++i], nullptr, 0);
    } else {
      programs.push_back(argv[i]);
    }
  }
  if (programs.empty()) {
    for (const char* p : {"record_compute", "record_syscalls", "loop_O2_static", "strings_O2_pie"})
      programs.push_back(std::string(BACKSTEP_RECORD_PROGRAMS) + "/" + p);
  }
  const bool emu = backstep::record::EmulatorAvailable();
  double load[3] = {};
  if (getloadavg(load, 3) == 3)
    std::printf("load average at start: %.2f %.2f %.2f\n", load[0], load[1], load[2]);
  std::printf("%-18s %-7s %10s %12s %14s %14s %10s %9s\n", "program", "engine", "insns",
              "bare step/s", "record(null)/s", "record(ucir)/s", "bytes/insn", "x ptrace");
  for (const std::string& path : programs) {
    const std::string name = path.substr(path.rfind('/') + 1);
    double bare_secs = 0;
    const std::uint64_t steps = BareSteps(path, max, &bare_secs);
    Row p, e;
    if (!Measure(false, path, max, &p)) return 1;
    std::printf("%-18s %-7s %10llu %12.0f %14.0f %14.0f %10.1f %9s\n", name.c_str(), "ptrace",
                static_cast<unsigned long long>(p.insns), steps / bare_secs, p.null_rate,
                p.file_rate, p.bytes_per_insn, "1.0");
    if (!emu) continue;
    if (!Measure(true, path, max, &e)) return 1;
    std::printf("%-18s %-7s %10llu %12s %14.0f %14.0f %10.1f %9.1f\n", name.c_str(), "emu",
                static_cast<unsigned long long>(e.insns), "", e.null_rate, e.file_rate,
                e.bytes_per_insn, e.file_rate / p.file_rate);
    std::fflush(stdout);
  }
  if (getloadavg(load, 3) == 3)
    std::printf("load average at end: %.2f %.2f %.2f\n", load[0], load[1], load[2]);
  return 0;
}
