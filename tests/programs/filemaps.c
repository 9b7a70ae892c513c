// filemaps.c: file mappings made, split, moved and replaced during the run
// (recorder/native/native_mapping_names_test.cc: the native engine's trace
// must name them as the ptrace engine's does). Besides the libraries ld.so
// maps (the PIE builds), it maps 4 pages of its own executable from offset
// 4096, makes the second writable (a split in three), unmaps the first,
// moves the last two into an anonymous reservation (mremap), shrinks them
// to one, maps the file's first page over another page of the reservation
// and anonymous memory over the middle of a shared mapping of the file;
// then loads libm with dlopen. Prints a sum of bytes it read from the file's
// pages (only pages the file holds).
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <stdio.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

enum { kPage = 4096 };

static off_t size;
static unsigned sum;

// Adds the first byte of the page at `p`, file offset `offset`, if the file holds it.
static void touch(const char* p, off_t offset) {
  if (offset < size) sum = sum * 31 + (unsigned char)*p;
}

int main(void) {
  int fd = open("/proc/self/exe", O_RDONLY);
  struct stat st;
  if (fd < 0 || fstat(fd, &st) != 0) return 1;
  size = st.st_size;
  char* file = mmap(0, 4 * kPage, PROT_READ, MAP_PRIVATE, fd, kPage);
  if (file == MAP_FAILED) return 2;
  mprotect(file + kPage, kPage, PROT_READ | PROT_WRITE);
  touch(file + kPage, 2 * kPage);
  munmap(file, kPage);
  char* reserve = mmap(0, 8 * kPage, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  char* moved = mremap(file + 2 * kPage, 2 * kPage, 2 * kPage, MREMAP_MAYMOVE | MREMAP_FIXED,
                       reserve + 4 * kPage);
  if (moved == MAP_FAILED) return 3;
  touch(moved + kPage, 4 * kPage);
  mremap(moved, 2 * kPage, kPage, 0);
  char* first = mmap(reserve + kPage, kPage, PROT_READ, MAP_PRIVATE | MAP_FIXED, fd, 0);
  touch(first, 0);
  char* shared = mmap(0, 3 * kPage, PROT_READ, MAP_SHARED, fd, 0);
  if (shared == MAP_FAILED) return 4;
  mmap(shared + kPage, kPage, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1,
       0);
  touch(shared + 2 * kPage, 2 * kPage);
  close(fd);
  void* library = dlopen("libm.so.6", RTLD_NOW);
  printf("filemaps %u %d\n", sum, library != 0);
  return 0;
}
