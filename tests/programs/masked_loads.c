// AVX-512 masked loads (EVEX, an opmask): vmovdqu8 of a page's last 3 bytes
// with the 61 masked-off bytes in the unmapped page after it (the CPU
// neither reads nor faults on them: glibc's *_evex functions load a
// buffer's tail so), and vmovdqu32 of 8 ints with lanes 0 and 2 enabled.
// recorder/masked_reads_test.cc records it and requires exactly the enabled
// elements' reads. Prints the two buffers' addresses, then what was loaded,
// or "no avx512" where the CPU (or the OS) lacks AVX-512 BW/VL.
#include <immintrin.h>
#include <stdio.h>
#include <sys/mman.h>

__attribute__((target("avx512f,avx512bw,avx512vl"))) static void Load(unsigned char *tail,
                                                                      int *ints) {
  unsigned char bytes[64];
  int lanes[8];
  _mm512_storeu_si512(bytes, _mm512_maskz_loadu_epi8(0x7, tail));
  _mm256_storeu_si256((__m256i *)lanes, _mm256_mask_loadu_epi32(_mm256_set1_epi32(-7), 0x5, ints));
  printf("bytes %d %d %d %d\nlanes", bytes[0], bytes[1], bytes[2], bytes[3]);
  for (int i = 0; i < 8; ++i) printf(" %d", lanes[i]);
  printf("\n");
}

int main(void) {
  unsigned char *pages =
      mmap(0, 2 * 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (pages == MAP_FAILED || munmap(pages + 4096, 4096) != 0) return 1;
  unsigned char *tail = pages + 4096 - 3;
  tail[0] = 11, tail[1] = 12, tail[2] = 13;
  int *ints = (int *)(pages + 256);
  for (int i = 0; i < 8; ++i) ints[i] = 100 + i;
  printf("tail %llx ints %llx\n", (unsigned long long)tail, (unsigned long long)ints);
  __builtin_cpu_init();
  if (!__builtin_cpu_supports("avx512bw") || !__builtin_cpu_supports("avx512vl")) {
    printf("no avx512\n");
    return 0;
  }
  Load(tail, ints);
  return 0;
}
