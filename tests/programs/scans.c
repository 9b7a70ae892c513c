// Calls glibc's memchr and strlen on small buffers, through pointers so the
// compiler cannot inline them: glibc picks each function's variant for the
// CPU (__memchr_evex on one with AVX-512, __memchr_avx2 or __memchr_sse2
// otherwise). recorder/evex_reads_test.cc records it and looks for the
// reads of found[5] and text[5] made inside libc.
#include <stdio.h>
#include <string.h>

static char found[64];
static char text[64] = "hello";

void *(*volatile find)(const void *, int, size_t) = memchr;
size_t (*volatile length)(const char *) = strlen;

int main(void) {
  found[5] = 'x';
  const char *at = find(found, 'x', sizeof found);
  const size_t n = length(text);
  printf("found %p text %p\n", (void *)found, (void *)text);
  printf("memchr %ld strlen %zu\n", (long)(at - found), n);
  return 0;
}
