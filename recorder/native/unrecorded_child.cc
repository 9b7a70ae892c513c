#include "recorder/native/unrecorded_child.h"

#include <signal.h>
#include <sys/ptrace.h>
#include <sys/user.h>
#include <sys/wait.h>
#include <x86intrin.h>

#include <cerrno>
#include <cstdint>

#include "recorder/cpuid.h"

namespace backstep::record {

pid_t ServeUnrecordedChild(pid_t child, int status) {
  if (!WIFSTOPPED(status)) return 0;  // it ended
  const int sig = WSTOPSIG(status);
  int deliver = 0;
  if (sig == SIGSEGV) {
    // The traps it inherited (PR_SET_TSC; CPUID faulting): answered as the
    // CPU would, not logged.
    siginfo_t info{};
    ptrace(PTRACE_GETSIGINFO, child, nullptr, &info);
    user_regs_struct regs{};
    const bool trap =
        info.si_code == SI_KERNEL && ptrace(PTRACE_GETREGS, child, nullptr, &regs) == 0;
    std::uint8_t code[3] = {};
    for (std::size_t i = 0; trap && i < sizeof code; ++i) {
      errno = 0;
      const long word = ptrace(PTRACE_PEEKDATA, child, regs.rip + i, nullptr);
      if (errno == 0) code[i] = static_cast<std::uint8_t>(word);
    }
    const bool rdtsc = trap && code[0] == 0x0f && code[1] == 0x31;
    const bool rdtscp = trap && code[0] == 0x0f && code[1] == 0x01 && code[2] == 0xf9;
    const bool cpuid = trap && code[0] == 0x0f && code[1] == 0xa2;
    if (rdtsc || rdtscp) {
      unsigned aux = 0;
      const std::uint64_t tsc = __rdtscp(&aux);
      regs.rax = tsc & 0xffffffff;
      regs.rdx = tsc >> 32;
      if (rdtscp) regs.rcx = aux;
      regs.rip += rdtsc ? 2 : 3;
    } else if (cpuid) {
      const CpuidResult r =
          HostCpuid(static_cast<std::uint32_t>(regs.rax), static_cast<std::uint32_t>(regs.rcx));
      regs.rax = r.eax, regs.rbx = r.ebx, regs.rcx = r.ecx, regs.rdx = r.edx;
      regs.rip += 2;
    }
    if (rdtsc || rdtscp || cpuid) {
      ptrace(PTRACE_SETREGS, child, nullptr, &regs);
    } else {
      deliver = sig;
    }
  } else if (sig != SIGTRAP && sig != (SIGTRAP | 0x80) && sig != SIGSTOP) {
    deliver = sig;  // its own signals
  }
  // Event stops (its system calls through the seccomp filter, its own
  // forks and execs) and the stop a new child starts with: resumed.
  const int event = status >> 16;
  if (event != 0) deliver = 0;
  unsigned long born = 0;
  if (event == PTRACE_EVENT_FORK || event == PTRACE_EVENT_VFORK || event == PTRACE_EVENT_CLONE)
    ptrace(PTRACE_GETEVENTMSG, child, nullptr, &born);
  ptrace(PTRACE_CONT, child, nullptr, deliver);
  return static_cast<pid_t>(born);
}

}  // namespace backstep::record
