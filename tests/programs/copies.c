// Copies whose provenance tests/python/test_origin_oracle.py checks, chain
// by chain, against the ORIGIN lines of this file. An ORIGIN line reads
// "ORIGIN: A <- B <- ... (end)": the value in A at the end of the program
// came from B, which came from ..., and the chain ends for the reason in
// parentheses. A is a global, `sym+N` a field, `*ptr` the variable whose
// address the program stores in global `ptr` (a stack slot), `%reg` a
// register the assembly pins. Between two named locations the compiler may
// pass the value through registers of its choice; nothing else.
#include <string.h>

typedef unsigned long u64;

// Equal values: the second load leaves rax as it was, and the trace records
// no register change for it.
// ORIGIN: dst1 <- src1 (initial image)
// ORIGIN: dst2 <- src2 (initial image)
volatile u64 src1 = 42, src2 = 42, dst1, dst2;

// Unequal values.
// ORIGIN: udst1 <- usrc1 (initial image)
// ORIGIN: udst2 <- usrc2 (initial image)
volatile u64 usrc1 = 0x1111, usrc2 = 0x2222, udst1, udst2;

// Register to register, pinned; rcx already holds the value (from decoy).
// ORIGIN: reg_dst <- %rdx <- %rcx <- %rax <- reg_src (initial image)
volatile u64 decoy = 0x5a5a5a5a5a5a5a5a, reg_src = 0x5a5a5a5a5a5a5a5a, reg_dst;

// Through a local on the stack.
// ORIGIN: stack_dst <- *stack_slot <- stack_src (initial image)
volatile u64 stack_src = 0x0102030405060708, stack_dst, stack_slot;

// Through a struct field.
// ORIGIN: field_dst <- pair+8 <- field_src (initial image)
struct Pair {
  u64 first, second;
};
volatile struct Pair pair;
volatile u64 field_src = 0x7766554433221100, field_dst;

// memcpy (glibc's, not inlined: the length is volatile).
// ORIGIN: buf_dst <- buf_src (initial image)
unsigned char buf_src[16] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16};
unsigned char buf_dst[16];
volatile size_t buf_len = 16;

// A function argument, kept in memory (volatile parameter).
// ORIGIN: arg_dst <- *arg_slot <- arg_src (initial image)
volatile u64 arg_src = 0xabcdef0123456789, arg_dst, arg_slot;

// A return value.
// ORIGIN: ret_dst <- ret_src (initial image)
volatile u64 ret_src = 0x0badc0de0badc0de, ret_dst;

// An immediate.
// ORIGIN: imm_dst (immediate 0x3039)
volatile u64 imm_dst;

__attribute__((noinline)) void take(volatile u64 v) {
  arg_slot = (u64)&v;
  arg_dst = v;
}

__attribute__((noinline)) u64 give(void) { return ret_src; }

int main(void) {
  dst1 = src1;
  dst2 = src2;
  udst1 = usrc1;
  udst2 = usrc2;
  __asm__ volatile(
      "movq %1, %%rcx\n\t"
      "movq %2, %%rax\n\t"
      "movq %%rax, %%rcx\n\t"
      "movq %%rcx, %%rdx\n\t"
      "movq %%rdx, %0"
      : "=m"(reg_dst)
      : "m"(decoy), "m"(reg_src)
      : "rax", "rcx", "rdx");
  volatile u64 local = stack_src;
  stack_slot = (u64)&local;
  stack_dst = local;
  pair.second = field_src;
  field_dst = pair.second;
  memcpy(buf_dst, buf_src, buf_len);
  take(arg_src);
  ret_dst = give();
  imm_dst = 12345;
  return buf_dst[0] == 1 ? 0 : 1;
}
