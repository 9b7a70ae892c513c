/* Signal handlers (tests/e2e/test_recorded_threads_signals.py, record_replay_test):
 * SIGUSR1 raised by the program itself, SIGALRM interrupting pause(). The
 * recording holds each delivery (the frame the kernel writes on the stack),
 * the handlers' instructions and rt_sigreturn. The tests find source lines
 * by the "MARK:" comments. */
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

volatile sig_atomic_t got_usr1, got_alrm;
long handled; /* written by the handlers only */

static void on_usr1(int sig) {
  got_usr1 = sig;
  handled += 7; /* MARK:usr1-write */
}

static void on_alrm(int sig) {
  got_alrm = sig;
  handled += 100; /* MARK:alrm-write */
}

int main(void) {
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_usr1;
  sigaction(SIGUSR1, &sa, NULL);
  sa.sa_handler = on_alrm;
  sigaction(SIGALRM, &sa, NULL);
  raise(SIGUSR1); /* MARK:raise */
  alarm(1);
  while (!got_alrm) pause(); /* MARK:pause */
  printf("usr1 %d alrm %d handled %ld\n", got_usr1, got_alrm, handled); /* MARK:print */
  return 0;
}
