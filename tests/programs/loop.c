// Recorder test program: a loop, a global counter, calls, the stack, and
// x87 arithmetic (long double) for the x87 state.
#include <stdio.h>

volatile long counter;
long table[64];
volatile long double scale = 1.0L;

static long square(long x) { return x * x; }

__attribute__((noinline)) long accumulate(int n) {
  long sum = 0;
  for (int i = 0; i < n; ++i) {
    counter++;
    table[i & 63] += square(i);
    sum += table[i & 63] ^ counter;
  }
  return sum;
}

int main(void) {
  long total = 0;
  for (int round = 0; round < 20; ++round) {
    total += accumulate(100 + round);
    scale *= 1.25L;
  }
  printf("%ld %ld %.3Lf\n", total, counter, scale);
  return (int)(total & 1);
}
