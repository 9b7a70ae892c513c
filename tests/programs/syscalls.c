// Recorder test program: read/write/fstat/mmap/munmap/mprotect/brk and
// malloc of big and small blocks.
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

int main(int argc, char** argv) {
  char buf[4096];
  int fd = open(argv[0], O_RDONLY);
  ssize_t got = read(fd, buf, sizeof buf);
  struct stat st;
  fstat(fd, &st);
  close(fd);
  char* big = malloc(1 << 21);  // mmap'd by malloc
  memset(big + 4096, 7, 1 << 16);
  char* small[64];
  for (int i = 0; i < 64; ++i) {  // brk
    small[i] = malloc(1000 + i * 100);
    memset(small[i], i, 1000);
  }
  char* m = mmap(NULL, 3 << 20, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  m[0] = 1;
  m[(3 << 20) - 1] = 2;
  mprotect(m + 4096, 4096, PROT_READ);
  munmap(m + (1 << 20), 1 << 20);
  for (int i = 0; i < 64; i += 2) free(small[i]);
  free(big);
  write(1, buf, got > 64 ? 64 : got);
  printf("\n%ld %d\n", (long)got, (int)(st.st_size > 0));
  return 0;
}
