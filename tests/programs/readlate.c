/* A global set at the start and read once, long after (tests/e2e/
 * test_recorded_reads.py): a read watchpoint in reverse from the end must
 * find that read, an access watchpoint the read and then the write. The
 * tests find source lines by the "MARK:" comments. */
#include <stdio.h>

long secret;          /* the watched global */
long noise[64];       /* written and read in between, never `secret` */

__attribute__((noinline)) long churn(int rounds) {
  long acc = 1;
  for (int r = 0; r < rounds; r++) {
    for (int i = 0; i < 64; i++) {
      noise[i] = noise[(i + 7) % 64] + acc;
      acc = acc * 31 + noise[i];
    }
  }
  return acc;
}

int main(void) {
  secret = 42;                      /* MARK:set */
  long acc = churn(20);
  long seen = secret;               /* MARK:read */
  printf("seen %ld acc %ld\n", seen, acc & 0xff); /* MARK:print */
  return 0;
}
