// shmats.c: SysV shared memory attached and detached
// (recorder/native/native_shm_test.cc: the native engine's trace must show
// the segment where the ptrace engine's does, with its contents). A 3-page
// segment (2 pages and a bit, rounded up by the kernel) is attached, filled
// (page k with 'x' + k), detached; attached again read-only, where it holds
// those bytes from the start, removed, read and detached. Prints a sum of the bytes
// read; exits with 0 whatever it read.
#define _GNU_SOURCE
#include <stdio.h>
#include <string.h>
#include <sys/ipc.h>
#include <sys/shm.h>

enum { kPage = 4096 };

int main(void) {
  int id = shmget(IPC_PRIVATE, 2 * kPage + 100, IPC_CREAT | 0600);
  if (id < 0) return 1;
  char* filled = shmat(id, 0, 0);
  if (filled == (char*)-1) return 2;
  for (int k = 0; k < 3; ++k) memset(filled + k * kPage, 'x' + k, kPage);
  if (shmdt(filled) != 0) return 3;
  const char* read = shmat(id, 0, SHM_RDONLY);
  // Removed now: it goes when its last attachment does.
  if (shmctl(id, IPC_RMID, 0) != 0 || read == (char*)-1) return 4;
  unsigned sum = 0;
  for (int k = 0; k < 3; ++k)
    sum = sum * 31 + (unsigned char)read[k * kPage] + (unsigned char)read[k * kPage + kPage - 1];
  if (shmdt(read) != 0) return 5;
  printf("shmats %u\n", sum);
  return 0;
}
