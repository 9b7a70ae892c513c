/* The side of a fork the recorder does not follow runs as without it
 * (recorder_test RecordFork.UntracedSide): each side runs rdtsc and cpuid,
 * which fault in the recorded process (PR_SET_TSC, --cpuid portable's CPUID
 * faulting), and any leaked single-step flag would trap; each then prints
 * its name. The child exits with 3, the parent prints the child's status. */
#include <cpuid.h>
#include <stdio.h>
#include <sys/wait.h>
#include <unistd.h>
#include <x86intrin.h>

static void probe(const char* side) {
  unsigned a = 0, b = 0, c = 0, d = 0;
  __cpuid(0, a, b, c, d);
  const unsigned long long t = __rdtsc();
  printf("%s %d\n", side, t != 0 && a != 0);
  fflush(stdout);
}

int main(void) {
  pid_t child = fork();
  if (child == 0) {
    probe("child");
    _exit(3);
  }
  int status = 0;
  waitpid(child, &status, 0);
  probe("parent");
  printf("child status %d signal %d\n", WIFEXITED(status) ? WEXITSTATUS(status) : -1,
         WIFSIGNALED(status) ? WTERMSIG(status) : 0);
  return 0;
}
