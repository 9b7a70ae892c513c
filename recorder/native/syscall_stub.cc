#include "recorder/native/syscall_stub.h"

// The handler, assembled into read-only data of the recorder (never run
// here). Every reference inside it is to a local label, so the assembler
// resolves it: the bytes run wherever they are copied. Offsets of the frame
// the handler pushes on its private stack: r15 0 ... rdi 112 (the order of
// user_regs_struct), flags 120. Data offsets: syscall_stub.h. clock_gettime
// is buffered for clocks 0-7 and 11 (TAI) with a non-null pointer only: the
// call cannot fail then but for a bad pointer, and the traced call's log
// holds its 16 bytes whatever the result (syscall_effects.h).
asm(R"(
  .pushsection .rodata.backstep_syscall_stub,"a",@progbits
  .balign 64
  .globl backstep_syscall_stub_begin
  .hidden backstep_syscall_stub_begin
backstep_syscall_stub_begin:
.Lbs_base:
.Lbs_allowed:
  syscall
  ret
  .balign 16, 0xcc
.Lbs_flush:
  syscall
  ret
  .balign 16, 0xcc
  pushfq
  push %rdi
  push %rsi
  push %rdx
  push %rcx
  push %rax
  push %r8
  push %r9
  push %r10
  push %r11
  push %rbx
  push %rbp
  push %r12
  push %r13
  push %r14
  push %r15
  cld
  lea .Lbs_base+0x1000(%rip), %rbp
  cmpq $0, 32(%rbp)
  jne .Lbs_traced
  mov 80(%rsp), %rax
  xor %r12d, %r12d
  xor %r13d, %r13d
  test %rax, %rax
  je .Lbs_read
  cmp $17, %rax
  je .Lbs_read
  cmp $1, %rax
  je .Lbs_fd
  cmp $18, %rax
  je .Lbs_fd
  cmp $8, %rax
  je .Lbs_fd
  cmp $39, %rax
  je .Lbs_go
  cmp $110, %rax
  je .Lbs_go
  cmp $186, %rax
  je .Lbs_go
  cmp $102, %rax
  je .Lbs_go
  cmp $104, %rax
  je .Lbs_go
  cmp $107, %rax
  je .Lbs_go
  cmp $108, %rax
  je .Lbs_go
  cmp $228, %rax
  jne .Lbs_traced
  cmpq $0, 40(%rbp)
  je .Lbs_traced
  mov 112(%rsp), %rcx
  cmp $7, %rcx
  jbe .Lbs_clock
  cmp $11, %rcx
  jne .Lbs_traced
.Lbs_clock:
  cmpq $0, 104(%rsp)
  je .Lbs_traced
  mov $2, %r12d
  mov $16, %r13d
  jmp .Lbs_go
.Lbs_read:
  mov $1, %r12d
  mov 96(%rsp), %r13
.Lbs_fd:
  mov 112(%rsp), %rcx
  cmp $1024, %rcx
  jae .Lbs_traced
  bt %rcx, 128(%rbp)
  jnc .Lbs_traced
.Lbs_go:
  cmp 72(%rbp), %r13
  ja .Lbs_traced
  add $183, %r13
  and $-8, %r13
  mov 48(%rbp), %rax
  add %r13, %rax
  cmp 64(%rbp), %rax
  jbe .Lbs_call
  mov $39, %eax
  call .Lbs_flush
  cmpq $0, 48(%rbp)
  je .Lbs_call
  movq $0, 48(%rbp)
  movq $0, 56(%rbp)
.Lbs_call:
  mov 80(%rsp), %rax
  mov 112(%rsp), %rdi
  mov 104(%rsp), %rsi
  mov 96(%rsp), %rdx
  mov 56(%rsp), %r10
  mov 72(%rsp), %r8
  mov 64(%rsp), %r9
  call .Lbs_allowed
  mov %rax, %r14
  lea 0x1000(%rbp), %rdi
  add 48(%rbp), %rdi
  mov %r13, (%rdi)
  mov 24(%rbp), %rax
  mov %rax, 8(%rdi)
  add $16, %rdi
  mov %rsp, %rsi
  mov $16, %ecx
  rep movsq
  mov 0(%rbp), %rax
  mov %rax, (%rdi)
  mov %r14, 8(%rdi)
  xor %eax, %eax
  xor %ecx, %ecx
  cmp $1, %r12d
  jne .Lbs_notread
  test %r14, %r14
  jle .Lbs_out
  mov 104(%rsp), %rax
  mov %r14, %rcx
  jmp .Lbs_out
.Lbs_notread:
  cmp $2, %r12d
  jne .Lbs_out
  test %r14, %r14
  jne .Lbs_out
  mov 104(%rsp), %rax
  test %rax, %rax
  je .Lbs_out
  mov $16, %ecx
.Lbs_out:
  mov %rax, 16(%rdi)
  mov %rcx, 24(%rdi)
  add $32, %rdi
  mov %rax, %rsi
  rep movsb
  add %r13, 48(%rbp)
  incq 56(%rbp)
  mov %r14, 80(%rsp)
  mov 120(%rsp), %rax
  mov %rax, 48(%rsp)
  mov 24(%rbp), %rax
  add $2, %rax
  mov %rax, 16(%rbp)
  jmp .Lbs_return
.Lbs_traced:
  mov 24(%rbp), %rax
  mov %rax, 16(%rbp)
.Lbs_return:
  pop %r15
  pop %r14
  pop %r13
  pop %r12
  pop %rbp
  pop %rbx
  pop %r11
  pop %r10
  pop %r9
  pop %r8
  pop %rax
  pop %rcx
  pop %rdx
  pop %rsi
  pop %rdi
  popfq
  mov .Lbs_base+0x1000(%rip), %rsp
  jmp *.Lbs_base+0x1010(%rip)
  .globl backstep_syscall_stub_end
  .hidden backstep_syscall_stub_end
backstep_syscall_stub_end:
  .popsection
)");

extern "C" const std::uint8_t backstep_syscall_stub_begin[];
extern "C" const std::uint8_t backstep_syscall_stub_end[];

namespace backstep::record::stub {

std::span<const std::uint8_t> HandlerCode() {
  return {backstep_syscall_stub_begin, backstep_syscall_stub_end};
}

}  // namespace backstep::record::stub
