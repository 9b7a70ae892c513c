/* The native engine's per-system-call cost taken apart (docs/benchmarks.md,
 * "System call cost in the record phase"): a minimal tracer doing the
 * engine's work for each of a child's 20,000 reads of /dev/zero, with the
 * parts chosen by the letters of argv[1]:
 *   s  seccomp SECCOMP_RET_TRACE stop at entry, then PTRACE_SYSCALL to the
 *      exit stop (else PTRACE_SYSCALL entry and exit stops)
 *   g  PTRACE_GETREGS at each stop       p  two PTRACE_PEEKSIGINFO at exit
 *   m  a 64-byte pread of /proc/PID/mem  t  the child's rdtsc faults (PR_SET_TSC)
 *   c  the child has CPUID faulting      C  the tracer has it as well
 * Prints wall and CPU time (tracer plus child) per traced call.
 *   cc -O2 -o /tmp/ptrace_stop_cost bench/ptrace_stop_cost.c
 *   for f in sgpm sgpmt sgpmtc sgpmtcC; do /tmp/ptrace_stop_cost $f; done */
#define _GNU_SOURCE
#include <asm/prctl.h>
#include <fcntl.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/ptrace.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/user.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static double seconds(struct timeval t) { return t.tv_sec + t.tv_usec * 1e-6; }

int main(int argc, char **argv) {
  const char *f = argc > 1 ? argv[1] : "";
  const int seccomp = !!strchr(f, 's'), regs = !!strchr(f, 'g'), peek = !!strchr(f, 'p'),
            mem = !!strchr(f, 'm'), tsc = !!strchr(f, 't'), cpuid = !!strchr(f, 'c'),
            tracer_cpuid = !!strchr(f, 'C');
  const int n = 20000;
  const pid_t child = fork();
  if (child == 0) {
    ptrace(PTRACE_TRACEME, 0, 0, 0);
    raise(SIGSTOP);
    if (tsc) prctl(PR_SET_TSC, PR_TSC_SIGSEGV, 0, 0, 0);
    if (cpuid && syscall(SYS_arch_prctl, ARCH_SET_CPUID, 0) != 0) _exit(3);
    if (seccomp) {
      struct sock_filter trace[] = {BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_TRACE)};
      struct sock_fprog prog = {1, trace};
      prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0);
      syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &prog);
    }
    char buf[64];
    const int zero = open("/dev/zero", O_RDONLY);
    for (int i = 0; i < n; i++) read(zero, buf, sizeof buf);
    _exit(0);
  }
  int status = 0;
  waitpid(child, &status, 0);
  ptrace(PTRACE_SETOPTIONS, child, 0,
         PTRACE_O_TRACESYSGOOD | PTRACE_O_EXITKILL | (seccomp ? PTRACE_O_TRACESECCOMP : 0));
  char path[64];
  snprintf(path, sizeof path, "/proc/%d/mem", child);
  const int mem_fd = open(path, O_RDONLY);
  if (tracer_cpuid && syscall(SYS_arch_prctl, ARCH_SET_CPUID, 0) != 0) return 3;
  struct timespec t0, t1;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  long calls = 0;
  struct user_regs_struct r;
  char b[64];
  siginfo_t si;
  const int resume = seccomp ? PTRACE_CONT : PTRACE_SYSCALL;
  ptrace(resume, child, 0, 0);
  for (;;) {
    waitpid(-1, &status, __WALL);  // entry
    if (WIFEXITED(status)) break;
    if (regs) ptrace(PTRACE_GETREGS, child, 0, &r);
    ptrace(PTRACE_SYSCALL, child, 0, 0);
    waitpid(-1, &status, __WALL);  // exit
    if (WIFEXITED(status)) break;
    calls++;
    if (regs) ptrace(PTRACE_GETREGS, child, 0, &r);
    for (int k = 0; peek && k < 2; k++) {
      struct __ptrace_peeksiginfo_args a = {0, k ? PTRACE_PEEKSIGINFO_SHARED : 0, 1};
      ptrace(PTRACE_PEEKSIGINFO, child, &a, &si);
    }
    if (mem && regs) pread(mem_fd, b, sizeof b, (off_t)r.rsi);
    ptrace(resume, child, 0, 0);
  }
  clock_gettime(CLOCK_MONOTONIC, &t1);
  struct rusage self, children;
  getrusage(RUSAGE_SELF, &self);
  getrusage(RUSAGE_CHILDREN, &children);
  const double cpu = seconds(self.ru_utime) + seconds(self.ru_stime) + seconds(children.ru_utime) +
                     seconds(children.ru_stime);
  const double wall = (t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) * 1e-9;
  printf("%-8s %ld calls: wall %.2f us/call, CPU %.2f us/call\n", f, calls, wall / calls * 1e6,
         cpu / calls * 1e6);
  return 0;
}
