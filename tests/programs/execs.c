/* fork + exec (e2e_recorded_threads_signals Execs, recorder_test RecordExec):
 * the child execs argv[1] with the arguments after it; the parent waits,
 * prints the child's status and exits with it. Recorded with --follow
 * child, the trace goes on in the program the child execs. */
#include <stdio.h>
#include <sys/wait.h>
#include <unistd.h>

int main(int argc, char** argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: execs PROG [ARGS]\n");
    return 2;
  }
  fflush(stdout);
  pid_t child = fork();
  if (child == 0) {
    execv(argv[1], argv + 1); /* MARK:exec */
    _exit(127);
  }
  int status = 0;
  waitpid(child, &status, 0);
  printf("child status %d\n", WIFEXITED(status) ? WEXITSTATUS(status) : -1); /* MARK:print */
  return WIFEXITED(status) ? WEXITSTATUS(status) : 1;
}
