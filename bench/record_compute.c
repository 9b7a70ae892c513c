/* record_bench's compute-bound program: integer hashing and a small sieve,
 * no system calls after start-up, about 6M instructions at -O2. */
#include <stdio.h>

static unsigned char sieve[1 << 16];
static unsigned long mix[256];

int main(void) {
  unsigned long h = 1469598103934665603ul;
  for (int round = 0; round < 6; ++round) {
    for (unsigned i = 2; i < sizeof sieve; ++i) sieve[i] = 0;
    for (unsigned i = 2; i * i < sizeof sieve; ++i)
      if (!sieve[i])
        for (unsigned j = i * i; j < sizeof sieve; j += i) sieve[j] = 1;
    for (unsigned i = 0; i < sizeof sieve; i += 7) {
      h = (h ^ sieve[i] ^ i) * 1099511628211ul;
      mix[h & 255] += h >> 7;
    }
  }
  printf("%lx %lx\n", h, mix[17]);
  return 0;
}
