/* What rr-style in-process system call buffering would cost per call
 * (docs/benchmarks.md, "System call cost in the record phase"): a seccomp
 * filter traps read and write (SECCOMP_RET_TRAP, SIGSYS) except from one
 * instruction address; the SIGSYS handler makes the call from there, copies
 * the result into a buffer, and returns (rt_sigreturn). The same loop as
 * record_syscalls.c, 200,000 times; with no argument, without the filter.
 * With "traced", the same as "trap" under a minimal ptrace tracer that only
 * passes each stop's signal on (both on one CPU, as the native engine runs
 * them): a traced process stops for every signal delivered to it, SIGSYS
 * included, so the trap costs a ptrace stop there (CPU of both, per call).
 *   cc -O2 -o /tmp/sigsys_buffer_cost bench/sigsys_buffer_cost.c
 *   /tmp/sigsys_buffer_cost; /tmp/sigsys_buffer_cost trap;
 *   /tmp/sigsys_buffer_cost traced */
#define _GNU_SOURCE
#include <fcntl.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sched.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/ptrace.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <ucontext.h>
#include <unistd.h>

extern char allowed_syscall[];  // the one `syscall` the filter lets through

static long RawSyscall(long nr, long a, long b, long c) {
  long r;
  __asm__ volatile("allowed_syscall: syscall"
                   : "=a"(r)
                   : "a"(nr), "D"(a), "S"(b), "d"(c)
                   : "rcx", "r11", "memory");
  return r;
}

static char buffer[1 << 20];
static size_t used;

static void OnSigsys(int sig, siginfo_t *info, void *context) {
  (void)sig, (void)info;
  greg_t *g = ((ucontext_t *)context)->uc_mcontext.gregs;
  const long r = RawSyscall(g[REG_RAX], g[REG_RDI], g[REG_RSI], g[REG_RDX]);
  g[REG_RAX] = r;
  if (used + 128 > sizeof buffer) used = 0;
  memcpy(buffer + used, &r, 8);  // the result and the 64 bytes read
  if (r > 0 && r <= 64) memcpy(buffer + used + 8, (void *)g[REG_RSI], (size_t)r);
  used += 72;
}

static double CpuSeconds(void) {
  struct rusage u;
  getrusage(RUSAGE_SELF, &u);
  return u.ru_utime.tv_sec + u.ru_utime.tv_usec * 1e-6 + u.ru_stime.tv_sec +
         u.ru_stime.tv_usec * 1e-6;
}

static double ChildrenCpuSeconds(void) {
  struct rusage u;
  getrusage(RUSAGE_CHILDREN, &u);
  return u.ru_utime.tv_sec + u.ru_utime.tv_usec * 1e-6 + u.ru_stime.tv_sec +
         u.ru_stime.tv_usec * 1e-6;
}

/* "traced": runs "trap" in a traced child and passes its signals on. */
static int RunTraced(char *self) {
  cpu_set_t one;
  CPU_ZERO(&one);
  CPU_SET(0, &one);
  sched_setaffinity(0, sizeof one, &one);
  const double start = CpuSeconds();
  const pid_t child = fork();
  if (child == 0) {
    ptrace(PTRACE_TRACEME, 0, 0, 0);
    execl(self, self, "trap", (char *)0);
    _exit(127);
  }
  long stops = 0;
  for (int status;;) {
    if (waitpid(child, &status, 0) != child || WIFEXITED(status) || WIFSIGNALED(status)) break;
    const int sig = WSTOPSIG(status);
    ++stops;
    ptrace(PTRACE_CONT, child, 0, sig == SIGTRAP ? 0 : sig);
  }
  printf("traced: %ld signal stops, %.3f us of CPU (tracer and child) per call\n", stops,
         (CpuSeconds() - start + ChildrenCpuSeconds()) / (2.0 * 200000) * 1e6);
  return 0;
}

int main(int argc, char **argv) {
  if (argc > 1 && strcmp(argv[1], "traced") == 0) return RunTraced(argv[0]);
  const int trap = argc > 1, n = 200000;
  char buf[64];
  const int zero = open("/dev/zero", O_RDONLY), null = open("/dev/null", O_WRONLY);
  if (trap) {
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = OnSigsys;
    sa.sa_flags = SA_SIGINFO;
    sigaction(SIGSYS, &sa, 0);
    const unsigned long ip = (unsigned long)allowed_syscall + 2;  // as seccomp sees it: after it
    struct sock_filter filter[] = {
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, instruction_pointer)),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (unsigned)ip, 0, 3),
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, instruction_pointer) + 4),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (unsigned)(ip >> 32), 0, 1),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_read, 1, 0),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_write, 0, 1),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_TRAP),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
    };
    struct sock_fprog prog = {sizeof filter / sizeof filter[0], filter};
    prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0);
    if (syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &prog) != 0) return 2;
  }
  const double start = CpuSeconds();
  for (int i = 0; i < n; i++) {
    if (read(zero, buf, sizeof buf) != sizeof buf) return 1;
    buf[i & 63] = (char)i;
    if (write(null, buf, sizeof buf) != sizeof buf) return 1;
  }
  printf("%s: %.3f us of CPU per call (%zu bytes buffered last)\n",
         trap ? "SIGSYS-trapped, buffered" : "plain", (CpuSeconds() - start) / (2.0 * n) * 1e6,
         used);
  return 0;
}
