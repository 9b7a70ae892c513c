/* A fork child that runs cpuid without exec (native_recorder_test
 * NativeRecord.ForkChildsCpuidIsAnswered): with CPUID faulting the child
 * inherits it and the native engine's recorder, which has CPUID faulting
 * itself while it records, answers the child's cpuid with the CPU's values.
 * Prints the highest basic leaf the parent sees and the child's exit
 * status (7 when its cpuid answered with a non-zero vendor). */
#include <cpuid.h>
#include <stdio.h>
#include <sys/wait.h>
#include <unistd.h>

int main(void) {
  unsigned max_leaf = 0, b = 0, c = 0, d = 0;
  __cpuid_count(0, 0, max_leaf, b, c, d);
  const pid_t child = fork();
  if (child == 0) {
    unsigned a = 0, vendor = 0, e = 0, f = 0;
    __cpuid_count(0, 0, a, vendor, e, f);
    _exit(vendor != 0 ? 7 : 1);
  }
  int status = 0;
  waitpid(child, &status, 0);
  printf("max leaf %u child %d\n", max_leaf, WEXITSTATUS(status));
  return 0;
}
