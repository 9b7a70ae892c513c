// mappings.c: a dynamically linked program whose memory map changes during
// the run (tests/e2e/test_process_files.py): it loads a library with dlopen,
// maps 3 MiB of anonymous memory, protects one page of it and grows the heap,
// then calls checkpoint(). After checkpoint, when MAPS_OUT names a file, it
// copies its own /proc/self/maps there: the map the test compares with what
// the served recording shows at checkpoint. Then it writes 0xab over an
// 8-page region, unmaps it, calls unmapped(), maps it again (anonymous, at
// the same address) and calls remapped(): gdb must read the region as
// unmapped in between.
#include <dlfcn.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

__attribute__((noinline)) void checkpoint(void) { __asm__ volatile("" ::: "memory"); }
__attribute__((noinline)) void unmapped(void) { __asm__ volatile("" ::: "memory"); }
__attribute__((noinline)) void remapped(void) { __asm__ volatile("" ::: "memory"); }

enum { kRegionSize = 8 * 4096 };
unsigned char* volatile region;

static char buffer[1 << 16];

static void copy_maps(const char* path) {
  int in = open("/proc/self/maps", O_RDONLY);
  int out = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
  ssize_t n;
  while (in >= 0 && out >= 0 && (n = read(in, buffer, sizeof buffer)) > 0) write(out, buffer, n);
  close(in);
  close(out);
}

int main(void) {
  void* library = dlopen("libm.so.6", RTLD_NOW);
  char* anonymous = mmap(0, 3 << 20, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  anonymous[0] = 1;
  mprotect(anonymous + 4096, 4096, PROT_NONE);
  char* heap = malloc(100000);
  heap[0] = 1;
  checkpoint();  // MARK:checkpoint
  const char* maps_out = getenv("MAPS_OUT");
  if (maps_out) copy_maps(maps_out);
  region = mmap(0, kRegionSize, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  memset(region, 0xab, kRegionSize);
  munmap(region, kRegionSize);  // MARK:munmap
  unmapped();
  mmap(region, kRegionSize, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
  remapped();
  return library == 0;
}
