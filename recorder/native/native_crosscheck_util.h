// What the tests that compare a native recording with the ptrace engine's
// recording of the same run share (native_crosscheck_test.cc,
// native_mapping_names_test.cc): the CPUID the native engine sees, and the
// ptrace engine's recording made as the native engine runs the program.
#pragma once

#include <gtest/gtest.h>

#include "recorder/crosscheck_test_util.h"
#include "recorder/native/native_recorder.h"
#include "recorder/native/one_cpu.h"

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

}  // namespace backstep::record::test_util
