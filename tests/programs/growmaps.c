// growmaps.c: file mappings grown by mremap (recorder/native/
// native_grown_mappings_test.cc: the grown pages hold the file's next bytes
// in the native engine's trace as in the ptrace engine's). A 3-page file (a
// memfd; page k is filled with 'a' + k) whose first page is mapped
// MAP_PRIVATE and grown to 3 pages twice: in place (the 2 pages after it
// freed first), then with MREMAP_MAYMOVE where an anonymous page follows it
// (it moves). Prints a sum of the grown mappings' bytes; exits with 0
// whatever it read (a wrong byte shows in the trace, not as a divergence).
#define _GNU_SOURCE
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

enum { kPage = 4096 };

static unsigned sum;

// Adds the first and last byte of each of the 3 pages at `p`.
static void read_pages(const char* p) {
  for (int k = 0; k < 3; ++k)
    sum = sum * 31 + (unsigned char)p[k * kPage] + (unsigned char)p[k * kPage + kPage - 1];
}

int main(void) {
  int fd = memfd_create("growmaps", 0);
  if (fd < 0) return 1;
  char page[kPage];
  for (int k = 0; k < 3; ++k) {
    memset(page, 'a' + k, sizeof page);
    if (write(fd, page, sizeof page) != kPage) return 2;
  }
  // In place: the file's first page where 3 pages were reserved, the other 2 freed.
  char* reserve = mmap(0, 3 * kPage, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (reserve == MAP_FAILED) return 3;
  char* here = mmap(reserve, kPage, PROT_READ, MAP_PRIVATE | MAP_FIXED, fd, 0);
  if (here != reserve || munmap(reserve + kPage, 2 * kPage) != 0) return 4;
  if (mremap(here, kPage, 3 * kPage, 0) != here) return 5;
  read_pages(here);
  // Moved: an anonymous page follows the file's first page.
  char* pair = mmap(0, 2 * kPage, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (pair == MAP_FAILED) return 6;
  char* first = mmap(pair, kPage, PROT_READ, MAP_PRIVATE | MAP_FIXED, fd, 0);
  char* moved = mremap(first, kPage, 3 * kPage, MREMAP_MAYMOVE);
  if (first != pair || moved == MAP_FAILED || moved == first) return 7;
  read_pages(moved);
  close(fd);
  printf("growmaps %u\n", sum);
  return 0;
}
