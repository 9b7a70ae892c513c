/* A fatal signal: a store through a null pointer with no handler (SIGSEGV
 * ends the program). Every engine records the delivery where the store
 * faults, then the end (EngineCrossCheck, NativePtraceCrossCheck), so that
 * gdb stops there with SIGSEGV on any recording, as on the live process. */
#include <stdio.h>

int main(void) {
  volatile int* volatile null = 0;
  puts("about to crash");
  fflush(stdout);
  *null = 1; /* MARK:crash */
  return 0;
}
