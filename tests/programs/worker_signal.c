/* Two threads and a SIGUSR1 handler (tests/e2e/test_lldb_differential.py):
 * main computes, starts a worker thread that computes and raises SIGUSR1 on
 * itself (the handler runs in the worker), joins it, then raises SIGUSR1 on
 * the main thread. `total` is written by both threads and by the handler; a
 * `rep stosb` (memset of a volatile-sized buffer) gives an instruction whose
 * pc stays the same for many steps. The tests find source lines by the
 * "MARK:" comments. */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>

volatile sig_atomic_t hits;
long total;
static char buffer[64];

static void on_usr1(int sig) {
  hits += 1;
  total += 100 * sig; /* MARK:handler-add */
}

static long work(long n) {
  long sum = 0;
  for (long i = 1; i <= n; i++) {
    sum += i; /* MARK:work-add */
  }
  return sum;
}

static void clear(char *p, unsigned long n) {
  __asm__ volatile("rep stosb" : "+D"(p), "+c"(n) : "a"(0) : "memory"); /* MARK:rep-stos */
}

static void *worker(void *arg) {
  long n = (long)arg;
  total += work(n); /* MARK:worker-add */
  raise(SIGUSR1);   /* MARK:worker-raise */
  return NULL;
}

int main(void) {
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_usr1;
  sigaction(SIGUSR1, &sa, NULL);
  clear(buffer, sizeof buffer);
  total = work(5); /* MARK:main-work */
  pthread_t thread;
  pthread_create(&thread, NULL, worker, (void *)8); /* MARK:create */
  pthread_join(thread, NULL);                       /* MARK:join */
  raise(SIGUSR1);                                   /* MARK:main-raise */
  printf("hits %d total %ld\n", (int)hits, total);  /* MARK:print */
  return 0;
}
