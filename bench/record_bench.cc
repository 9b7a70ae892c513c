// record_bench: `backstep record`'s rate next to a bare PTRACE_SINGLESTEP
// loop over the same program, in the same run, and the bytes it writes per
// instruction.
//
//   record_bench [PROGRAM...]   (default: the recorder's test programs)
//
// Per program: bare stepping (fork, exec, single-step to exit, nothing
// else), recording into a sink that drops everything (the recorder's own
// cost), and recording into a UCIR file (plus the writer's cost).
#include <fcntl.h>
#include <sys/personality.h>
#include <sys/ptrace.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include "recorder/recorder.h"
#include "recorder/usercorn_sink.h"

namespace {

using Clock = std::chrono::steady_clock;
using backstep::record::RecordingSink;

double Seconds(Clock::time_point since) {
  return std::chrono::duration<double>(Clock::now() - since).count();
}

// Bare single-stepping: the floor any ptrace recorder sits on.
std::uint64_t BareSteps(const std::string& path, double* secs) {
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
  while (true) {
    ptrace(PTRACE_SINGLESTEP, pid, nullptr, 0);
    waitpid(pid, &status, 0);
    if (WIFEXITED(status) || WIFSIGNALED(status)) break;
    ++steps;
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

bool Record(const std::string& path, RecordingSink& sink, std::uint64_t* insns, double* secs) {
  backstep::record::RecordOptions options;
  options.spawn.argv = {path};
  options.spawn.stdout_fd = open("/dev/null", O_WRONLY);
  options.check_interval = 0;
  const auto start = Clock::now();
  auto r = backstep::record::Record(options, sink);
  *secs = Seconds(start);
  close(options.spawn.stdout_fd);
  if (!r.ok()) {
    std::fprintf(stderr, "%s: %s\n", path.c_str(), r.status().message().c_str());
    return false;
  }
  *insns = r->instructions;
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> programs(argv + 1, argv + argc);
  if (programs.empty()) {
    for (const char* p : {"loop_O2_static", "strings_O2_pie", "syscalls_O2_pie"}) {
      programs.push_back(std::string(BACKSTEP_RECORD_PROGRAMS) + "/" + p);
    }
  }
  std::printf("%-22s %10s %12s %14s %14s %9s %10s\n", "program", "insns", "bare step/s",
              "record(null)/s", "record(ucir)/s", "overhead", "bytes/insn");
  for (const std::string& path : programs) {
    double bare_secs = 0, null_secs = 0, file_secs = 0;
    const std::uint64_t steps = BareSteps(path, &bare_secs);
    std::uint64_t null_insns = 0, file_insns = 0;
    NullSink null_sink;
    if (!Record(path, null_sink, &null_insns, &null_secs)) return 1;
    const std::string out = "/tmp/record_bench_" + std::to_string(getpid()) + ".ucir";
    auto sink = backstep::record::UsercornSink::Create(out);
    if (!sink.ok() || !Record(path, **sink, &file_insns, &file_secs)) return 1;
    struct stat st {};
    stat(out.c_str(), &st);
    unlink(out.c_str());
    const double bare_rate = steps / bare_secs, file_rate = file_insns / file_secs;
    const std::string name = path.substr(path.rfind('/') + 1);
    std::printf("%-22s %10llu %12.0f %14.0f %14.0f %8.0f%% %10.1f\n", name.c_str(),
                static_cast<unsigned long long>(file_insns), bare_rate, null_insns / null_secs,
                file_rate, 100.0 * (bare_rate / file_rate - 1),
                static_cast<double>(st.st_size) / file_insns);
  }
  return 0;
}
