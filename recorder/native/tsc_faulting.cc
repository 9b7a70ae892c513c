#include "recorder/native/tsc_faulting.h"

#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>
#include <x86intrin.h>

#include <cerrno>
#include <csignal>

namespace backstep::record {
namespace {

bool Probe() {
  const pid_t pid = fork();
  if (pid < 0) return true;  // unknown: assume the documented behaviour
  if (pid == 0) {
    if (prctl(PR_SET_TSC, PR_TSC_SIGSEGV) != 0) _exit(1);
    signal(SIGSEGV, SIG_DFL);
    volatile unsigned long long tsc = __rdtsc();
    (void)tsc;
    _exit(0);  // it ran: the setting is ignored
  }
  int status = 0;
  pid_t got;
  while ((got = waitpid(pid, &status, 0)) < 0 && errno == EINTR) {
  }
  if (got != pid) return true;
  return WIFSIGNALED(status) && WTERMSIG(status) == SIGSEGV;
}

}  // namespace

bool RdtscFaults() {
  static const bool faults = Probe();
  return faults;
}

const char* RdtscNotFaultingHint() {
  return "this machine does not make rdtsc fault (its CPU or hypervisor ignores "
         "prctl(PR_SET_TSC)), so the native engine cannot log the time stamp counter values a "
         "program reads, and a program that reads one (every dynamically linked program: ld.so "
         "does) cannot be materialized; record such a program with --engine ptrace";
}

}  // namespace backstep::record
