// NativeInsn: runs one register-only x86-64 instruction on the host CPU,
// inside the recorder, to learn what the CPU (not QEMU's TCG) leaves in the
// registers and flags: the emulation engine's answer to instructions whose
// flags the architecture leaves "undefined" (mul, imul, shifts, bsf, bt...),
// which the CPU and TCG set differently. ~100x cheaper than stepping the
// tracee, which remains the way for instructions with memory operands.
//
// Suitable() says whether an instruction can run this way: no memory
// operand (no rip-relative either), no rsp/rip operand, not a division
// (which could fault in the recorder) and no control flow. The instruction
// runs in a generated stub that loads rax..r15 (except rsp) and rflags,
// executes the bytes, and stores them back.
//
// Thread-safety: one instance per thread; the stub page is private.
#pragma once

#include <capstone/capstone.h>

#include <cstdint>
#include <span>
#include <unordered_map>

namespace backstep::record {

class NativeInsn {
 public:
  NativeInsn();
  ~NativeInsn();
  NativeInsn(const NativeInsn&) = delete;
  NativeInsn& operator=(const NativeInsn&) = delete;

  static bool Suitable(const cs_insn& insn);

  // regs: rax rbx rcx rdx rsi rdi rbp rsp r8..r15 rflags (17 values, in
  // and out; rsp is not touched). False when no stub space is left.
  bool Run(std::uint64_t pc, std::span<const std::uint8_t> bytes, std::uint64_t* regs);
  // Drops the stub for pc (its bytes changed).
  void Forget(std::uint64_t pc) { stubs_.erase(pc); }

 private:
  std::uint8_t* page_ = nullptr;
  std::size_t used_ = 0;
  std::unordered_map<std::uint64_t, std::uint8_t*> stubs_;  // by pc
};

}  // namespace backstep::record
