// The engine cross-check for the native engine (the emu engine's is
// emu/emu_crosscheck_test.cc): a program recorded natively and materialized
// (native_recorder.h, materialize.h) gives, position by position, the trace
// the ptrace engine (the ground truth) records of it: the same event kinds,
// registers, every write (trace_compare_test_util.h). Neither trace holds
// reads here: materialization records none (the emu engine's rule).
//
// Inputs: both runs are pid 2 of a new PID namespace; the program gets
// GLIBC_TUNABLES as the native engine gives it (ProgramEnvironment) in both;
// CPUID is the portable table in both with CPUID faulting, else the CPU's;
// both run pinned to the CPU the native run used. The inputs that differ
// between two runs (AT_RANDOM's bytes, getrandom's, rdtsc's, the clock reads
// and sysinfo) are the ptrace run's, given to the native run
// (NativeOptions), as the emu engine's cross-check gives them to its run.
//
// The programs: interrupts.c (signals that interrupt pause, read and
// nanosleep, one restarted; fork and vfork), crash.c (a fatal SIGSEGV);
// BACKSTEP_CROSSCHECK_COMMANDS adds real programs (crosscheck_test_util.h), named RealPrograms/
// NativePtraceCrossCheck.MaterializedTraceEqualsPtraceTrace/N.
#include <gtest/gtest.h>

#include <cstdio>
#include <string>
#include <vector>

#include "recorder/crosscheck_test_util.h"
#include "recorder/native/native_crosscheck_util.h"
#include "recorder/native/native_test_util.h"
#include "recorder/one_cpu.h"
#include "recorder/trace_compare_test_util.h"

namespace backstep::record {
namespace {

using test_util::CrossCheckCase;

class NativePtraceCrossCheck : public ::testing::TestWithParam<CrossCheckCase> {};

TEST_P(NativePtraceCrossCheck, MaterializedTraceEqualsPtraceTrace) {
  const std::string base = ::testing::TempDir() + "/" + GetParam().name + ".native-check";
  const std::string log_path = base + ".nlog", materialized = base + ".materialized.ucir";
  const NativeLog::Cpuid cpuid = test_util::NativeCpuid();
  test_util::Recording ptrace_rec;
  ptrace_rec.path = base + ".ptrace.ucir";
  test_util::RecordWithPtraceAsNative(GetParam(), cpuid, &ptrace_rec);
  if (HasFatalFailure()) return;
  // The inputs that differ between two runs: the native run gets the ptrace run's.
  NativeOptions given;
  test_util::GiveRecordedInputs(ptrace_rec.path, &given);
  ASSERT_EQ(given.at_random.size(), 16u);
  ASSERT_EQ(test_util::RecordNativeLog(test_util::ArgvOf(GetParam()), log_path, given), "");
  core::Expected<NativeLog> log = ReadNativeLog(log_path);
  ASSERT_TRUE(log.ok()) << log.status().message();
  EXPECT_EQ(log->cpuid, cpuid);
  core::Expected<RecordResult> m = test_util::MaterializeTo(*log, materialized);
  ASSERT_TRUE(m.ok()) << m.status().message();
  EXPECT_NE(ptrace_rec.result.exit_code, 127);  // ld.so accepted the CPU
  EXPECT_EQ(m->end, ptrace_rec.result.end);
  EXPECT_EQ(m->exit_code, ptrace_rec.result.exit_code);
  EXPECT_EQ(m->signal, ptrace_rec.result.signal);
  EXPECT_EQ(m->signals, ptrace_rec.result.signals);
  EXPECT_EQ(m->instructions, ptrace_rec.result.instructions);
  EXPECT_EQ(m->syscalls, ptrace_rec.result.syscalls);
  test_util::CompareTraces(ptrace_rec.path, materialized, "ptrace", "materialized");
  if (HasFatalFailure()) return;
  for (const std::string& p : {log_path, materialized, ptrace_rec.path}) std::remove(p.c_str());
}

// Two programs keep it to seconds (the ptrace engine single-steps): every
// kind of interrupted call, fork and vfork; a fatal signal. The others on
// demand:
// BACKSTEP_CROSSCHECK_COMMANDS=build/recorder/programs/syscalls_O2_static.
INSTANTIATE_TEST_SUITE_P(Programs, NativePtraceCrossCheck,
                         ::testing::Values(CrossCheckCase{"interrupts_O2_static", {}},
                                           CrossCheckCase{"crash_O2_static", {}}),
                         [](const auto& p) { return p.param.name; });
INSTANTIATE_TEST_SUITE_P(RealPrograms, NativePtraceCrossCheck,
                         ::testing::ValuesIn(test_util::RealPrograms()),
                         [](const auto& p) { return p.param.name; });

}  // namespace
}  // namespace backstep::record
