// A value with a known provenance chain, for the origin tests
// (tests/python/test_origin.py): source_value (initial image) -> rax ->
// hop_memory -> rdi (a function argument) -> arg_sink -> rbx -> copy_src
// -> memcpy -> copy_dst. The hops are pinned in assembly so the chain is the
// same at -O0 and -O2; only memcpy's inside is glibc's.
#include <string.h>

unsigned long long source_value = 0x1122334455667788ULL;
unsigned long long hop_memory;
unsigned long long arg_sink;
unsigned char copy_src[8];
unsigned char copy_dst[8];
volatile size_t copy_len = 8;

// take_arg(v): arg_sink = v, straight from rdi.
void take_arg(unsigned long long v);
__asm__(
    ".text\n"
    ".globl take_arg\n"
    ".type take_arg, @function\n"
    "take_arg:\n"
    "\tmovq %rdi, arg_sink(%rip)\n"
    "\tret\n"
    ".size take_arg, .-take_arg\n");

int main(void) {
  __asm__ volatile("movq %1, %%rax\n\tmovq %%rax, %0"
                   : "=m"(hop_memory)
                   : "m"(source_value)
                   : "rax");
  __asm__ volatile("movq %0, %%rdi\n\tcall take_arg" : : "m"(hop_memory) : "rdi", "memory");
  __asm__ volatile("movq %1, %%rbx\n\tmovq %%rbx, %0"
                   : "=m"(*(unsigned long long*)copy_src)
                   : "m"(arg_sink)
                   : "rbx");
  memcpy(copy_dst, copy_src, copy_len);
  return copy_dst[0] == 0x88 ? 0 : 1;
}
