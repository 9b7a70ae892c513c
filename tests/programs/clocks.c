/* libc's clock functions (emu_recorder_test EmuVdso): with the vDSO they
 * read the kernel's [vvar] page; the recorder hides the vDSO, so they are
 * system calls (clock_gettime 228, gettimeofday 96, time 201). */
#include <stdio.h>
#include <sys/time.h>
#include <time.h>

int main(void) {
  struct timespec a, b;
  struct timeval tv;
  clock_gettime(CLOCK_MONOTONIC, &a);
  gettimeofday(&tv, NULL);
  const time_t now = time(NULL);
  clock_gettime(CLOCK_MONOTONIC, &b);
  const int ordered = b.tv_sec > a.tv_sec || (b.tv_sec == a.tv_sec && b.tv_nsec >= a.tv_nsec);
  printf("clocks %s\n", ordered && now > 0 && tv.tv_sec > 0 ? "ok" : "wrong");
  return 0;
}
