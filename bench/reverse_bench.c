/* The program bench/reverse_bench.py records both ways (gdb `record full`
 * and `backstep record`): integer-only (gdb's record full cannot undo x87 or
 * AVX-512 state on this machine), no libc calls in the measured part, about
 * 100k instructions at -O0. */
long counter;
long table[64];
long grand;

__attribute__((noinline)) long accumulate(int n) {
  long sum = 0;
  for (int i = 0; i < n; ++i) {
    counter++; /* BENCH-LOOP-BODY: `next`/`reverse-next` line by line from here */
    table[i & 63] += (long)i * i;
    sum += table[i & 63] ^ counter;
  }
  return sum;
}

/* Its call is a line of its own: `next` and `reverse-next` step over it whole
 * (a call whose result the line then uses leaves the line's tail as a line
 * table entry of its own, where gdb's `reverse-next` stops first). */
__attribute__((noinline)) void accumulate_into_grand(int n) { grand += accumulate(n); }

int main(void) {
  long total = 0;
  for (int round = 0; round < 20; ++round) total += accumulate(100 + round);
  accumulate_into_grand(1000); /* BENCH-NEXT-OVER: a call that runs a 1000-iteration loop */
  counter = total + grand;     /* BENCH-STOP: both sides start reversing here */
  return (int)(total & 1);
}
