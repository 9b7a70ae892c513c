// Traced by gdbserver tracepoints in tests/e2e/test_gdb_tfile_serve.py: a
// loop calls work(i, acc), which updates a global counter and a buffer, like
// the program behind shared/samples/gdb_tfile. `finished` is where the test
// stops the trace run.
volatile long counter;
char buf[64];

__attribute__((noinline)) long work(long a, long b) {
  long r = 3 * a + b;
  counter += r;
  buf[a % 60] = (char)('A' + r % 26);
  return r;
}

__attribute__((noinline)) void finished(void) { __asm__ volatile(""); }

int main(void) {
  long acc = 0;
  for (long i = 0; i < 400; ++i) acc = work(i, acc % 1000);
  finished();
  return (int)(acc & 1);
}
