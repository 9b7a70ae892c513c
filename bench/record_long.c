/* The native engine's long program (record_native_bench.py --long): ROUNDS
 * rounds (argv[1], default 100) of record_compute's hashing and sieve,
 * about 10M instructions each at -O2, each ending with a write of the hash
 * to stdout (a system call the record phase can snapshot at); with a second
 * argument "crash" it then dereferences a null pointer (SIGSEGV), the crash
 * to reverse-stepi from. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static unsigned char sieve[1 << 16];
static unsigned long mix[256];

int main(int argc, char** argv) {
  const long rounds = argc > 1 ? atol(argv[1]) : 100;
  unsigned long h = 1469598103934665603ul;
  char line[64];
  for (long round = 0; round < rounds; ++round) {
    for (int pass = 0; pass < 10; ++pass) {
      for (unsigned i = 2; i < sizeof sieve; ++i) sieve[i] = 0;
      for (unsigned i = 2; i * i < sizeof sieve; ++i)
        if (!sieve[i])
          for (unsigned j = i * i; j < sizeof sieve; j += i) sieve[j] = 1;
      for (unsigned i = 0; i < sizeof sieve; i += 7) {
        h = (h ^ sieve[i] ^ i) * 1099511628211ul;
        mix[h & 255] += h >> 7;
      }
    }
    const int n = snprintf(line, sizeof line, "%ld %lx\n", round, h);
    if (write(1, line, (size_t)n) != n) return 1;
  }
  if (argc > 2 && strcmp(argv[2], "crash") == 0) {
    volatile unsigned long* volatile null = 0;
    *null = h; /* the crash */
  }
  return (int)(mix[17] & 1);
}
