/* The program the debugger scenarios on recorded traces run
 * (tests/e2e/test_gdb_recorded.py, test_lldb_recorded.py): a global written
 * in a few places, a function called in a loop with a nested call and a
 * local. The tests find source lines by the "MARK:" comments, so keep each
 * marker on the line it names. Values: counter goes 0, 100, 101, 103, 108,
 * 118, 135, then 35 (the total). */
#include <stdio.h>

long counter;     /* the watched global */
int squares[8];   /* written by accumulate */

__attribute__((noinline)) int square(int x) {
  return x * x; /* MARK:square-body */
}

__attribute__((noinline)) int accumulate(int i) {
  int local = square(i) + 1; /* MARK:accumulate-call */
  counter += local;          /* MARK:counter-add */
  squares[i % 8] = local;    /* MARK:squares-store */
  return local;              /* MARK:accumulate-return */
}

int main(void) {
  counter = 100; /* MARK:counter-init */
  int total = 0;
  for (int i = 0; i < 5; i++) {
    total += accumulate(i); /* MARK:loop-call */
  }
  counter = total;                                     /* MARK:counter-final */
  printf("total %d counter %ld\n", total, counter);    /* MARK:print */
  return 0;                                            /* MARK:return */
}
