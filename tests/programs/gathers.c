// AVX2 gathers (VSIB addressing), masked: vpgatherdd (dword indices and
// elements, 8 lanes), vpgatherqq (qword indices and elements, 4 lanes) and
// vpgatherqd (qword indices, dword elements: 4 lanes from a ymm index). Each
// reads only its enabled lanes' elements of its own table; the lanes whose
// mask is clear read nothing. recorder/gather_reads_test.cc records it and
// requires exactly the enabled lanes' reads. Prints the tables' addresses,
// then the lanes gathered.
#include <immintrin.h>
#include <stdio.h>

static int table32[64];
static long long table64[64];
static int table_qd[64];

__attribute__((target("avx2"))) static void Gather(void) {
  // vpgatherdd: lanes 2 and 5 disabled.
  const __m256i index32 = _mm256_setr_epi32(3, 17, 40, 9, 55, 1, 28, 62);
  const __m256i mask32 = _mm256_setr_epi32(-1, -1, 0, -1, -1, 0, -1, -1);
  int got32[8];
  _mm256_storeu_si256((__m256i *)got32,
                      _mm256_mask_i32gather_epi32(_mm256_set1_epi32(-7), table32, index32,
                                                  mask32, 4));
  // vpgatherqq: lane 1 disabled.
  const __m256i index64 = _mm256_setr_epi64x(5, 33, 60, 12);
  const __m256i mask64 = _mm256_setr_epi64x(-1, 0, -1, -1);
  long long got64[4];
  _mm256_storeu_si256((__m256i *)got64,
                      _mm256_mask_i64gather_epi64(_mm256_set1_epi64x(-7), table64, index64,
                                                  mask64, 8));
  // vpgatherqd: lane 3 disabled.
  const __m128i mask_qd = _mm_setr_epi32(-1, -1, -1, 0);
  int got_qd[4];
  _mm_storeu_si128((__m128i *)got_qd,
                   _mm256_mask_i64gather_epi32(_mm_set1_epi32(-7), table_qd,
                                               _mm256_setr_epi64x(7, 21, 50, 2), mask_qd, 4));
  printf("dd");
  for (int i = 0; i < 8; ++i) printf(" %d", got32[i]);
  printf("\nqq");
  for (int i = 0; i < 4; ++i) printf(" %lld", got64[i]);
  printf("\nqd");
  for (int i = 0; i < 4; ++i) printf(" %d", got_qd[i]);
  printf("\n");
}

int main(void) {
  for (int i = 0; i < 64; ++i) {
    table32[i] = 1000 + i;
    table64[i] = 2000 + i;
    table_qd[i] = 3000 + i;
  }
  printf("table32 %p table64 %p table_qd %p\n", (void *)table32, (void *)table64,
         (void *)table_qd);
  if (!__builtin_cpu_supports("avx2")) {
    printf("no avx2\n");
    return 0;
  }
  Gather();
  return 0;
}
