// What the tests that compare a native recording with the ptrace engine's
// recording of the same run share (native_crosscheck_test.cc,
// native_mapping_names_test.cc, native_grown_mappings_test.cc,
// native_shm_test.cc): the CPUID the native engine sees, the ptrace
// engine's recording made as the native engine runs the program, both
// engines' runs of one program, and its materialization both ways.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <cstdio>
#include <functional>
#include <initializer_list>
#include <string>

#include "recorder/crosscheck_test_util.h"
#include "recorder/native/native_recorder.h"
#include "recorder/native/native_test_util.h"
#include "recorder/one_cpu.h"
#include "recorder/trace_compare_test_util.h"

namespace backstep::record::test_util {

// CPUID as the native engine sees it here: the portable table when the
// CPU can make it fault, else this CPU's (the first this process may use,
// where the native engine pins the program).
inline NativeLog::Cpuid NativeCpuid() {
  return CpuidFaultingAvailable() ? NativeLog::Cpuid::kPortable : NativeLog::Cpuid::kHost;
}

// `program` recorded by the ptrace engine into rec->path in a new PID
// namespace, as the native engine runs it: no reads (materialization
// records none), CPUID `cpuid`, on the CPU the native engine pins the
// program to (sched_getaffinity's answer is the same in either mode).
inline void RecordWithPtraceAsNative(const CrossCheckCase& program, NativeLog::Cpuid cpuid,
                                     Recording* rec) {
  RecordInNewPidNamespace(
      program, "ptrace",
      [&](RecordOptions& options, RecordingSink& sink) -> core::Expected<RecordResult> {
        options.reads = false;
        options.portable_cpuid = cpuid == NativeLog::Cpuid::kPortable;
        if (core::Status s = PinToCpu(0, FirstAllowedCpu()); !s.ok()) return s;
        const ProgramEnvironment environment(cpuid);
        return Record(options, sink);
      },
      rec);
}

// One program recorded by both engines, the same run: the ptrace engine's
// trace (`base`.ptrace.ucir) and the native engine's log (`base`.nlog,
// snapshots every `snapshot_syscalls` calls), given the ptrace run's
// random bytes and clock reads. `before_each` runs before each recording
// (a test that needs each run in a namespace of its own). Fatal failures
// end the caller's test (check HasFatalFailure()).
struct BothEngines {
  Recording ptrace;
  std::string log_path;
  NativeLog log;
};
inline void RecordWithBothEngines(const CrossCheckCase& program, const std::string& base,
                                  std::uint64_t snapshot_syscalls, BothEngines* out,
                                  const std::function<void()>& before_each = {}) {
  out->ptrace.path = base + ".ptrace.ucir";
  out->log_path = base + ".nlog";
  if (before_each) before_each();
  if (::testing::Test::HasFatalFailure()) return;
  RecordWithPtraceAsNative(program, NativeCpuid(), &out->ptrace);
  if (::testing::Test::HasFatalFailure()) return;
  NativeOptions given;
  GiveRecordedInputs(out->ptrace.path, &given);
  given.snapshot_syscalls = snapshot_syscalls;
  if (before_each) before_each();
  if (::testing::Test::HasFatalFailure()) return;
  ASSERT_EQ(RecordNativeLog(ArgvOf(program), out->log_path, given), "");
  core::Expected<NativeLog> log = ReadNativeLog(out->log_path);
  ASSERT_TRUE(log.ok()) << log.status().message();
  out->log = std::move(*log);
}

// `run.log` materialized in one pass into `single`, then in intervals on
// two workers into `joined`. After each, `check(trace, what)` (the test's
// own look; also after a pass that diverged, whose trace up to there is
// kept), then the whole trace against the ptrace engine's, position by
// position. Stops at the first failure.
inline void MaterializeBothWaysAndCompare(
    const BothEngines& run, const std::string& single, const std::string& joined,
    const std::function<void(const std::string&, const char*)>& check) {
  MaterializeOptions one_pass;
  one_pass.use_snapshots = false;
  core::Expected<RecordResult> s = MaterializeTo(run.log, single, one_pass);
  EXPECT_TRUE(s.ok()) << s.status().message();
  check(single, "single pass");
  if (!s.ok()) return;
  CompareTraces(run.ptrace.path, single, "ptrace", "single pass");
  if (::testing::Test::HasFailure()) return;
  MaterializeOptions parallel;
  parallel.jobs = 2;
  core::Expected<RecordResult> j = MaterializeTo(run.log, joined, parallel);
  ASSERT_TRUE(j.ok()) << j.status().message();
  check(joined, "joined intervals");
  CompareTraces(run.ptrace.path, joined, "ptrace", "joined intervals");
}

// Removes the run's log, its snapshots and trace, and `traces` with their
// indexes.
inline void RemoveRunFiles(const BothEngines& run, std::initializer_list<std::string> traces) {
  for (const SnapshotRef& r : run.log.snapshots) {
    std::remove((run.log.directory + "/" + r.file).c_str());
  }
  std::remove(run.log_path.c_str());
  for (const std::string& p : traces) {
    std::remove(p.c_str());
    std::remove((p + ".bsidx").c_str());
  }
  std::remove(run.ptrace.path.c_str());
  std::remove((run.ptrace.path + ".bsidx").c_str());
}

}  // namespace backstep::record::test_util
