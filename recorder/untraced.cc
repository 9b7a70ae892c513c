#include "recorder/untraced.h"

#include <asm/prctl.h>
#include <sched.h>
#include <sys/prctl.h>
#include <sys/ptrace.h>
#include <sys/syscall.h>
#include <sys/user.h>

#include <string>

namespace backstep::record {
namespace {

constexpr std::uint64_t kTf = 1u << 8;

core::Status RunPrctl(Tracee& tracee, pid_t tid, core::Address at, std::uint64_t nr,
                      std::uint64_t option, std::uint64_t value, const char* what) {
  const std::uint64_t args[] = {option, value};
  core::Expected<std::uint64_t> r = tracee.InjectSyscall(tid, at, nr, args);
  if (!r.ok()) return r.status();
  if (*r != 0) {
    return core::Status::IOError(std::string(what) + " in process " + std::to_string(tid) +
                                 " failed (error " +
                                 std::to_string(-static_cast<std::int64_t>(*r)) + ")");
  }
  return core::Status::Ok();
}

}  // namespace

bool CreatesProcess(const Tracee& tracee, std::uint64_t nr, const std::uint64_t args[6]) {
  if (nr == SYS_fork || nr == SYS_vfork) return true;
  if (nr == SYS_clone) return (args[0] & CLONE_THREAD) == 0;
  if (nr != SYS_clone3) return false;
  std::uint64_t flags = 0;  // struct clone_args starts with the flags
  if (tracee.ReadMemory(args[0], {reinterpret_cast<std::uint8_t*>(&flags), 8}) != 8) return false;
  return (flags & CLONE_THREAD) == 0;
}

core::Status SetTraps(Tracee& tracee, pid_t tid, core::Address syscall_at, Traps traps, bool on) {
  if (traps.rdtsc) {
    if (core::Status s = RunPrctl(tracee, tid, syscall_at, SYS_prctl, PR_SET_TSC,
                                  on ? PR_TSC_SIGSEGV : PR_TSC_ENABLE, "prctl(PR_SET_TSC)");
        !s.ok())
      return s;
  }
  if (traps.cpuid) {
    // ARCH_SET_CPUID 0: cpuid faults; 1: it runs.
    if (core::Status s = RunPrctl(tracee, tid, syscall_at, SYS_arch_prctl, ARCH_SET_CPUID,
                                  on ? 0 : 1, "arch_prctl(ARCH_SET_CPUID)");
        !s.ok())
      return s;
  }
  return core::Status::Ok();
}

core::Status Untrace(Tracee& tracee, pid_t tid, core::Address syscall_at, Traps traps) {
  if (core::Status s = SetTraps(tracee, tid, syscall_at, traps, false); !s.ok()) return s;
  // A child copies the flags of its single-stepped parent, TF included.
  user_regs_struct regs{};
  if (ptrace(PTRACE_GETREGS, tid, nullptr, &regs) != 0)
    return core::Status::IOError("PTRACE_GETREGS " + std::to_string(tid));
  if ((regs.eflags & kTf) == 0) return core::Status::Ok();
  regs.eflags &= ~kTf;
  if (ptrace(PTRACE_SETREGS, tid, nullptr, &regs) != 0)
    return core::Status::IOError("PTRACE_SETREGS " + std::to_string(tid));
  return core::Status::Ok();
}

}  // namespace backstep::record
