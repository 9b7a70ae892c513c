/* Signals from faulting instructions (emu_recorder_test EmuFaults): a store
 * into a read-only page (SIGSEGV; the handler makes the page writable and
 * returns, so the store runs again) and a division by zero (SIGFPE; the
 * handler jumps out with siglongjmp). Prints what the handlers saw. */
#include <setjmp.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>

static char* page;
static volatile int segv, fpe;
static sigjmp_buf out;

static void on_segv(int sig, siginfo_t* info, void* context) {
  (void)sig;
  (void)context;
  segv += info->si_addr == page + 10; /* MARK:segv-handler */
  mprotect(page, 4096, PROT_READ | PROT_WRITE);
}

static void on_fpe(int sig) {
  fpe = sig; /* MARK:fpe-handler */
  siglongjmp(out, 1);
}

int main(void) {
  page = mmap(NULL, 4096, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_sigaction = on_segv;
  sa.sa_flags = SA_SIGINFO;
  sigaction(SIGSEGV, &sa, NULL);
  signal(SIGFPE, on_fpe);
  page[10] = 42; /* MARK:store */
  volatile int zero = 0, quotient = 7;
  if (sigsetjmp(out, 1) == 0) quotient = quotient / zero;
  printf("segv %d value %d fpe %d\n", segv, page[10], fpe);
  return 0;
}
