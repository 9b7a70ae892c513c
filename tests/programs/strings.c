// Recorder test program: libc string functions on large buffers (AVX2/
// SSE versions in glibc), plus some floating point (SSE and x87).
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char a[1 << 16], b[1 << 16];

int main(void) {
  memset(a, 'x', sizeof a - 1);
  size_t n = strlen(a);
  memcpy(b, a, n);
  memset(b + 100, 0, 8);
  size_t m = strlen(b);
  memmove(a + 3, a, 5000);
  int c = memcmp(a, b, 4096);
  char* p = strchr(b + 200, 'y');
  double d = 0;
  for (int i = 1; i < 50; ++i) d += 1.0 / i;
  long double e = 1;
  for (int i = 1; i < 20; ++i) e *= 1.5L;
  char text[128];
  snprintf(text, sizeof text, "%zu %zu %d %p %.6f %.3Lf", n, m, c, (void*)p, d, e);
  puts(text);
  return 0;
}
