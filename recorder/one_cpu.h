// One CPU: for the native engine's record phase (native/native_recorder.h), the
// program and the recorder's thread run on the same CPU, so that a stop and a
// resume are a switch between the two, never to the idle thread (which would
// rewrite the CPUID faulting setting: cpuid.h, CpuidFaultingForThisThread).
// Also where cpuid.cc reads the first CPU's ids (WithFirstCpuIds).
//
// Thread-safety: acts on the calling thread or on the given process.
#pragma once

#include <sched.h>
#include <sys/types.h>

#include "backstep/core/status.h"

namespace backstep::record {

// The first CPU the calling thread may run on.
int FirstAllowedCpu();

// Pins thread or process `pid` to `cpu`; IOError naming the CPU otherwise.
core::Status PinToCpu(pid_t pid, int cpu);

// For its lifetime, the calling thread runs on `cpu` only (nothing when
// it is out of range or refused); its affinity is restored after.
class ThreadOnCpu {
 public:
  explicit ThreadOnCpu(int cpu);
  ~ThreadOnCpu();
  ThreadOnCpu(const ThreadOnCpu&) = delete;
  ThreadOnCpu& operator=(const ThreadOnCpu&) = delete;

 private:
  cpu_set_t saved_{};
  bool pinned_ = false;
};

}  // namespace backstep::record
