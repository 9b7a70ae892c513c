// Engine cross-check: records every test program (tests/programs/*.c,
// -O0/-O2 x static/PIE) with the ptrace engine (the ground truth) and the
// emulation engine, both with --cpuid portable and --no-vdso, and replays both UCIR
// traces side by side through the usercorn reader: at every position the
// same event kind, the same registers written, every GPR, rip, eflags, the
// selectors and fs/gs base equal, and the bytes each instruction wrote (in
// either trace) equal in both; x87 control/status/tag, mxcsr and xmm0-15 every 16 positions and
// at every system call; all memory either trace knows every 50000
// positions and at the end; the same number of instructions.
//
// Nondeterministic inputs: AT_RANDOM's bytes (stack canary, pointer guard)
// getrandom's (malloc's tcache key), rdtsc's (ld.so's start time) and those
// of the system calls whose answer varies (the clock reads, since the vDSO
// is hidden, and sysinfo: real programs call them), the bytes read from
// /dev/urandom or /dev/random (perl's hash seed), the inode numbers and
// times stat-family calls return (files a run creates or writes), where an
// ignored signal arrived (SIGCHLD when an untraced child exits): the
// emulated run gets the ptrace run's (EmuOptions); process
// and thread ids: both programs run as pid 2 of a new PID namespace. The ptrace engine's rdtsc is
// the host's, the emulator's a counter: the programs do not execute it.
//
// Real programs: BACKSTEP_CROSSCHECK_COMMANDS="wc small.txt;gzip -c small.txt"
// adds one case per command (run in the current directory, words split on
// spaces, the program found on PATH), named RealPrograms/EngineCrossCheck.
// EmuTraceEqualsPtraceTrace/N; not set (CI): none. The rates make them
// minutes each (docs/usage-record.md, "Emulation engine").
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "recorder/crosscheck_test_util.h"
#include "recorder/emu/emu_recorder.h"
#include "recorder/recorder.h"
#include "recorder/trace_compare_test_util.h"

namespace backstep::record {
namespace {

using test_util::CrossCheckCase;
using test_util::Recording;

void RecordWith(bool emu, const CrossCheckCase& program, Recording* out,
                EmuOptions emu_options = {}) {
  out->path = ::testing::TempDir() + "/" + program.name + (emu ? ".emu" : ".ptrace") + ".ucir";
  test_util::RecordInNewPidNamespace(
      program, emu ? "emu" : "ptrace",
      [&](RecordOptions& options, RecordingSink& sink) {
        options.portable_cpuid = true;
        return emu ? RecordEmulated(options, sink, emu_options) : Record(options, sink);
      },
      out);
}

class EngineCrossCheck : public ::testing::TestWithParam<CrossCheckCase> {};

TEST_P(EngineCrossCheck, EmuTraceEqualsPtraceTrace) {
  Recording ptrace_rec, emu_rec;
  RecordWith(false, GetParam(), &ptrace_rec);
  if (HasFatalFailure()) return;
  // The one input that differs between two runs and reaches the programs'
  // state (stack canary, pointer guard): the emulated run gets the ptrace run's.
  // The same for getrandom's bytes (malloc's tcache key).
  EmuOptions inputs;
  test_util::GiveRecordedInputs(ptrace_rec.path, &inputs);
  ASSERT_EQ(inputs.at_random.size(), 16u);
  inputs.quiet_signals = test_util::QuietSignals(ptrace_rec.path);
  RecordWith(true, GetParam(), &emu_rec, inputs);
  if (HasFatalFailure()) return;
  // The programs ran to their end (127: ld.so refused the CPU the table describes).
  EXPECT_NE(ptrace_rec.result.exit_code, 127);
  EXPECT_EQ(emu_rec.result.end, ptrace_rec.result.end);
  EXPECT_EQ(emu_rec.result.exit_code, ptrace_rec.result.exit_code);
  EXPECT_EQ(emu_rec.result.signal, ptrace_rec.result.signal);
  EXPECT_EQ(emu_rec.result.signals, ptrace_rec.result.signals);
  EXPECT_EQ(emu_rec.result.instructions, ptrace_rec.result.instructions);
  EXPECT_EQ(emu_rec.result.syscalls, ptrace_rec.result.syscalls);

  test_util::CompareTraces(ptrace_rec.path, emu_rec.path, "ptrace", "emu");
  if (HasFatalFailure()) return;
  std::remove(ptrace_rec.path.c_str());
  std::remove(emu_rec.path.c_str());
}

std::vector<CrossCheckCase> Programs() {
  std::vector<CrossCheckCase> out;
  bool o0_pie = true;
  for (const char* p : {"loop", "strings", "syscalls", "scenario", "dataflow", "tracepoints"}) {
    // Two of the four builds (recorder_test replays all four with the ptrace
    // engine): together they cover -O0/-O2 and static/PIE. In the sanitizer
    // build, where these are among the slowest cases and only slow (10-40 s
    // each), one per program, the two in turn.
    for (const char* build : {"O0_pie", "O2_static"}) {
#ifdef BACKSTEP_SANITIZED_BUILD
      if ((std::string(build) == "O0_pie") != o0_pie) continue;
#endif
      out.push_back({std::string(p) + "_" + build, {}});
    }
    o0_pie = !o0_pie;
  }
  // Random bytes read from /dev/urandom, a new file's inode and times.
  out.push_back({"varying_O2_static", {}});
  // An untraced child's exit: SIGCHLD, ignored, wherever the parent is.
  out.push_back({"forks_O2_static", {}});
  // A fatal SIGSEGV: the delivery, then the end.
  out.push_back({"crash_O2_static", {}});
  return out;
}

INSTANTIATE_TEST_SUITE_P(Programs, EngineCrossCheck, ::testing::ValuesIn(Programs()),
                         [](const auto& p) { return p.param.name; });
INSTANTIATE_TEST_SUITE_P(RealPrograms, EngineCrossCheck,
                         ::testing::ValuesIn(test_util::RealPrograms()),
                         [](const auto& p) { return p.param.name; });

}  // namespace
}  // namespace backstep::record
