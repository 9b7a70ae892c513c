/* Inputs that differ between two runs of the same program (the engine
 * cross-check, emu_crosscheck_test.cc, gives the emulated run the ptrace
 * run's): bytes read from /dev/urandom (perl's hash seed), and the inode
 * number and times of a file the run creates (a compiler's temporary file). */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

int main(void) {
  unsigned char seed[8] = {0};
  const int fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);
  if (fd < 0 || read(fd, seed, sizeof seed) != sizeof seed) return 1;
  close(fd);
  char name[] = "/tmp/varyingXXXXXX";
  const int tmp = mkstemp(name);
  if (tmp < 0) return 2;
  struct stat by_fd, by_name;
  const int written = write(tmp, seed, sizeof seed) == sizeof seed;
  const int ok = written && fstat(tmp, &by_fd) == 0 && stat(name, &by_name) == 0 &&
                 by_fd.st_ino == by_name.st_ino && by_name.st_size == sizeof seed;
  close(tmp);
  unlink(name);
  unsigned mix = 0;
  for (unsigned i = 0; i < sizeof seed; ++i) mix = mix * 31 + seed[i];
  mix ^= (unsigned)by_name.st_ino ^ (unsigned)by_name.st_mtim.tv_nsec;
  printf("varying %s %u\n", ok ? "ok" : "wrong", mix & 1);
  return ok ? 0 : 3;
}
