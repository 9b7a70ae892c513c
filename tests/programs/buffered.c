/* The native engine's system call buffer (recorder/native/syscall_buffer.h):
 * the calls it buffers, made through glibc's wrappers (the sites it
 * patches) on /dev/zero, /dev/null, a regular file and a descriptor dup2
 * made; interleaved with calls of the same wrappers it passes on to the
 * recorder (a pipe, also on a number a closed buffered descriptor had) and
 * calls it does not know. With an argument, it then loops on buffered
 * writes until the SIGUSR1 a forked child sends arrives (held while the
 * program is in the buffer's handler, delivered at its next call); the
 * child, which inherits the patched code, makes more writes than the
 * buffer holds. Before, a vfork child makes buffered calls in the
 * program's memory. Prints a sum of what it read and what it got.
 * With "compute": 4000 buffered pwrites of 256 KiB to a file (CPU time in
 * the kernel, a few instructions each to emulate), so that the recorder
 * never stops it unless it asks to (for snapshots by the program's CPU
 * time). */
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static volatile sig_atomic_t got;

static void OnUsr1(int sig) { got = sig; }

static char big[1 << 18];

static int Compute(void) {
  char path[] = "/tmp/backstep-buffered-XXXXXX";
  const int file = mkstemp(path);
  if (file < 0) return 1;
  unlink(path);
  long sum = 0;
  for (int i = 0; i < 4000; ++i) {
    big[i % sizeof big] = (char)i;
    sum += pwrite(file, big, sizeof big, 0);
  }
  printf("wrote %ld\n", sum);
  return 0;
}

int main(int argc, char **argv) {
  if (argc > 1 && argv[1][0] == 'c') return Compute();
  char buf[256] = {0}, path[] = "/tmp/backstep-buffered-XXXXXX";
  const int zero = open("/dev/zero", O_RDONLY), null = open("/dev/null", O_WRONLY);
  const int file = mkstemp(path);
  int pipes[2];
  if (zero < 0 || null < 0 || file < 0 || pipe(pipes) != 0) return 1;
  unlink(path);
  long sum = 0;
  for (int i = 0; i < 300; ++i) {
    if (read(zero, buf, 64 + i % 64) != 64 + i % 64) return 2;
    buf[i % 64] = (char)i;
    sum += buf[(i * 7) % 64];
    if (write(null, buf, 32) != 32 || write(file, buf, 16) != 16) return 3;
    if (i % 50 == 0) {  // the same wrappers on a pipe: passed on
      if (write(pipes[1], buf, 8) != 8 || read(pipes[0], buf + 100, 8) != 8) return 4;
    }
    sum += getpid() + getppid() + (long)getuid();
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    if (i % 100 == 0) clock_gettime((clockid_t)10, &t);  // no such clock: passed on
  }
  if (lseek(file, 0, SEEK_SET) != 0) return 5;
  sum += read(file, buf, sizeof buf);
  sum += pread(file, buf + 16, 16, 32) + buf[20];
  if (dup2(file, 9) != 9 || write(9, buf, 8) != 8) return 6;
  close(null);
  int again[2];  // takes null's number: a pipe now
  if (pipe(again) != 0 || write(again[1], buf, 4) != 4 || read(again[0], buf, 4) != 4) return 7;
  if (argc > 1) {
    const int quiet = open("/dev/null", O_WRONLY);
    signal(SIGUSR1, OnUsr1);
    // A vfork child writes in the program's memory, buffer included.
    const pid_t shared = vfork();
    if (shared == 0) {
      for (int i = 0; i < 100; ++i) write(quiet, buf, 2);
      _exit(0);
    }
    waitpid(shared, NULL, 0);
    const pid_t parent = getpid(), child = fork();
    if (child == 0) {
      for (int i = 0; i < 8000; ++i) write(quiet, buf, 8);
      kill(parent, SIGUSR1);
      _exit(0);
    }
    for (long spins = 0; !got && spins < 400000000; ++spins) write(quiet, buf, 1);
    waitpid(child, NULL, 0);
    sum += got;
    printf("got %d\n", got);
  }
  printf("sum %ld\n", sum);
  return 0;
}
