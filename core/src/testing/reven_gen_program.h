// The synthetic program behind reven_generator.h: a dozen functions of
// 20-30 instructions at fixed virtual addresses, with prologues/epilogues,
// one loop each, calls to higher-numbered functions (no recursion), and a
// main function that loops forever. The generator walks it like a CPU.
//
// Thread-safety: a value type.
#pragma once

#include <cstdint>
#include <vector>

#include "backstep/core/types.h"

namespace backstep::core::testing {

// A tiny deterministic PRNG (splitmix64): reproducible across platforms.
class GenRandom {
 public:
  explicit GenRandom(std::uint64_t seed) : state_(seed) {}
  std::uint64_t Next() {
    std::uint64_t z = (state_ += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }
  // Uniform in [0, n). REQUIRES: n > 0.
  std::uint64_t Below(std::uint64_t n) { return Next() % n; }

 private:
  std::uint64_t state_;
};

enum class GenKind : std::uint8_t {
  kAlu,       // SET a GPR, eflags bit operation
  kPush,      // push rbx/rbp: stack write, rsp -= 8
  kPop,       // pop: SET GPR from the stack, rsp += 8
  kCall,      // push return address, rsp -= 8, SET rip
  kRet,       // rsp += 8, SET rip
  kLoopBack,  // SET rcx, eflags op, jump back while the frame's count lasts
  kJump,      // main's back edge: SET rip
  kStore,     // heap store (1-8 bytes, sometimes 300)
  kLoad,      // SET a GPR
  kBigStore,  // 16-20 heap stores (memory continuation chunk)
  kManyRegs,  // 16 register SETs (register continuation chunk)
  kX87,       // SET x87rN, top, x87status, x87tags
  kZmm,       // SET zmmN
  kMmio,      // write to the local APIC (outside the declared regions)
};

struct GenInsn {
  Address pc = 0;
  std::uint8_t length = 1;  // 1..15
  GenKind kind = GenKind::kAlu;
  std::uint32_t target = 0;  // kCall: callee's first insn; kLoopBack/kJump: insn index
};

struct GenProgram {
  std::vector<GenInsn> insns;
  std::uint32_t main_entry = 0;
};

// Builds the program at `code_base` (it fits in 0x3c00 bytes).
GenProgram BuildGenProgram(Address code_base, GenRandom& rng);

}  // namespace backstep::core::testing
