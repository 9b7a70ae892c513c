/* Every catchable signal, each sent by the program to itself in turn, after
 * the pattern of gdb's gdb.reverse/sigall-reverse.c (tests/e2e/
 * test_recorded_sigall.py). Each signal has a handler of its own, so a
 * debugger's stops name the handler; the stop signals SIGTSTP, SIGTTIN and
 * SIGTTOU are handled like the others. SIGINT (Ctrl-C stops a recording),
 * SIGTRAP (single-stepping's own), SIGKILL and SIGSTOP are left out.
 * `sigall stop` sends SIGTSTP with its default action instead (the process
 * stops: only under the recorder, which resumes it); `sigall segv` dies of
 * SIGSEGV at MARK:fault. */
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

volatile sig_atomic_t delivered[NSIG];

#define SIGNAL_LIST(X)                                                                  \
  X(HUP) X(QUIT) X(ILL) X(ABRT) X(BUS) X(FPE) X(USR1) X(SEGV) X(USR2) X(PIPE) X(ALRM) \
  X(TERM) X(CHLD) X(CONT) X(TSTP) X(TTIN) X(TTOU) X(URG) X(XCPU) X(XFSZ) X(VTALRM)   \
  X(PROF) X(WINCH) X(IO) X(PWR) X(SYS)

#define HANDLER(name) \
  static void handle_##name(int sig) { delivered[sig]++; }
SIGNAL_LIST(HANDLER)

#define GEN(name) \
  static void gen_##name(void) { kill(getpid(), SIG##name); }
SIGNAL_LIST(GEN)

int main(int argc, char** argv) {
  if (argc > 1 && strcmp(argv[1], "stop") == 0) {
    kill(getpid(), SIGTSTP);
    puts("resumed");
    return 0;
  }
  if (argc > 1 && strcmp(argv[1], "segv") == 0) {
    volatile int* volatile nowhere = NULL;
    delivered[SIGSEGV] = 1; /* MARK:before-fault */
    return *nowhere;        /* MARK:fault */
  }
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
#define INSTALL(name)                \
  sa.sa_handler = handle_##name;     \
  sigaction(SIG##name, &sa, NULL);
  SIGNAL_LIST(INSTALL)
#define SEND(name) gen_##name();
  SIGNAL_LIST(SEND)
  int count = 0;
  for (int i = 0; i < NSIG; i++) count += delivered[i];
  printf("delivered %d\n", count); /* MARK:print */
  return 0;
}
