/* fork and vfork (recorder_test RecordFork): with --follow parent the
 * recording is the parent's (it waits for both children and prints their
 * statuses); with --follow child it is the fork child's, which writes
 * `marker` and exits with status 3 (vfork's child then never runs traced). */
#include <stdio.h>
#include <sys/wait.h>
#include <unistd.h>

long marker; /* the fork child's write */

int main(void) {
  pid_t child = fork();
  if (child == 0) {
    marker = 0x600d; /* MARK:child-write */
    _exit(3);
  }
  int status = 0;
  waitpid(child, &status, 0);
  pid_t vchild = vfork();
  if (vchild == 0) _exit(4);
  int vstatus = 0;
  waitpid(vchild, &vstatus, 0);
  printf("fork %d vfork %d marker %ld\n", WEXITSTATUS(status), WEXITSTATUS(vstatus),
         marker); /* MARK:print */
  return 0;
}
