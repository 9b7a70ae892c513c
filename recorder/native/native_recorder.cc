#include "recorder/native/native_recorder.h"

#include <asm/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstdlib>

#include "recorder/cpuid.h"
#include "recorder/native/native_session.h"
#include "recorder/one_cpu.h"

namespace backstep::record {

bool CpuidFaultingAvailable() {
  // Setting "cpuid enabled" changes nothing, and fails without the feature.
  return syscall(SYS_arch_prctl, ARCH_SET_CPUID, 1) == 0;
}

ProgramEnvironment::ProgramEnvironment(NativeLog::Cpuid cpuid) {
  if (cpuid != NativeLog::Cpuid::kHost) return;
  const char* old = getenv("GLIBC_TUNABLES");
  had_ = old != nullptr;
  if (had_) saved_ = old;
  const std::string value = had_ && *old ? saved_ + ":" + kHostCpuidTunables : kHostCpuidTunables;
  changed_ = setenv("GLIBC_TUNABLES", value.c_str(), 1) == 0;
}

ProgramEnvironment::~ProgramEnvironment() {
  if (!changed_) return;
  if (had_) {
    setenv("GLIBC_TUNABLES", saved_.c_str(), 1);
  } else {
    unsetenv("GLIBC_TUNABLES");
  }
}

core::Expected<NativeResult> RecordNative(const NativeOptions& options,
                                          const std::string& log_path) {
  const NativeLog::Cpuid cpuid =
      CpuidFaultingAvailable() ? NativeLog::Cpuid::kPortable : NativeLog::Cpuid::kHost;
  if (cpuid == NativeLog::Cpuid::kHost && options.portable_cpuid) {
    return core::Status::Unsupported(
        "--engine native --cpuid portable: this machine cannot make CPUID fault (no cpuid_fault "
        "flag), so the program would see the host's CPUID; record without --cpuid portable "
        "(and materialize on this machine)");
  }
  // The program's environment (and the hash the log keeps of it).
  const ProgramEnvironment environment(cpuid);
  core::Expected<Tracee> tracee = Tracee::Spawn(options.spawn);
  if (!tracee.ok()) return tracee.status();
  NativeSession session(options, std::move(*tracee), cpuid, log_path);
  if (core::Status s = session.Start(); !s.ok()) return s;
  // The recorder's thread runs on the program's CPU (a stop and a resume
  // are then a switch between the two, rr pins so too) and faults CPUID as
  // well (cpuid.h: CpuidFaultingForThisThread): those switches then leave
  // the CPU's faulting setting alone.
  const ThreadOnCpu pinned(session.cpu());
  const CpuidFaultingForThisThread faulting(cpuid == NativeLog::Cpuid::kPortable);
  if (core::Status s = session.Run(); !s.ok()) return s;
  if (core::Status s = WriteNativeLog(session.log(), log_path); !s.ok()) return s;
  return session.result();
}

}  // namespace backstep::record
