#include "testing/reven_gen_program.h"

namespace backstep::core::testing {
namespace {

constexpr int kFunctions = 12;
constexpr Address kFunctionStride = 0x300;

// Body kinds, weighted: mostly ALU and memory, a few rare heavy ones.
GenKind RandomBodyKind(GenRandom& rng) {
  const std::uint64_t r = rng.Below(100);
  if (r < 40) return GenKind::kAlu;
  if (r < 65) return GenKind::kStore;
  if (r < 80) return GenKind::kLoad;
  if (r < 86) return GenKind::kX87;
  if (r < 92) return GenKind::kZmm;
  if (r < 95) return GenKind::kBigStore;
  if (r < 97) return GenKind::kManyRegs;
  return GenKind::kAlu;
}

}  // namespace

GenProgram BuildGenProgram(Address code_base, GenRandom& rng) {
  GenProgram p;
  std::vector<std::uint32_t> entry(kFunctions);
  // Pass 1: lay out every function, so calls can name any callee.
  struct Layout {
    std::uint32_t first, count;
  };
  std::vector<Layout> layout;
  for (int f = 0; f < kFunctions; ++f) {
    const auto count = static_cast<std::uint32_t>(20 + rng.Below(11));
    layout.push_back({static_cast<std::uint32_t>(p.insns.size()), count});
    entry[f] = layout.back().first;
    Address pc = code_base + f * kFunctionStride;
    for (std::uint32_t i = 0; i < count; ++i) {
      GenInsn insn;
      insn.pc = pc;
      insn.length = static_cast<std::uint8_t>(1 + rng.Below(15));
      insn.kind = RandomBodyKind(rng);
      pc += insn.length;
      p.insns.push_back(insn);
    }
  }
  // Pass 2: structure. Main: push rbp, body, jump back to 1, four calls.
  // Others: push rbp, push rbx, body with one loop, pop rbx, pop rbp, ret.
  for (int f = 0; f < kFunctions; ++f) {
    GenInsn* fn = &p.insns[layout[f].first];
    const std::uint32_t n = layout[f].count;
    fn[0].kind = GenKind::kPush;
    if (f == 0) {
      fn[n - 1].kind = GenKind::kJump;
      fn[n - 1].target = layout[f].first + 1;
      for (int c = 0; c < 4; ++c) {
        GenInsn& call = fn[1 + rng.Below(n - 2)];
        call.kind = GenKind::kCall;
        call.target = entry[1 + rng.Below(kFunctions - 1)];
      }
      // One MMIO write per main iteration, outside every region.
      fn[n - 2].kind = GenKind::kMmio;
      continue;
    }
    fn[1].kind = GenKind::kPush;
    fn[n - 3].kind = GenKind::kPop;
    fn[n - 2].kind = GenKind::kPop;
    fn[n - 1].kind = GenKind::kRet;
    // The loop [a, b] sits strictly inside the body [2, n - 4].
    const std::uint32_t a = 2 + static_cast<std::uint32_t>(rng.Below((n - 6) / 2));
    const std::uint32_t b = a + 2 + static_cast<std::uint32_t>(rng.Below(n - 5 - (a + 2)));
    fn[b].kind = GenKind::kLoopBack;
    fn[b].target = layout[f].first + a;
    if (f + 1 < kFunctions && rng.Below(2) == 0) {
      GenInsn& call = fn[2 + rng.Below(n - 6)];
      if (call.kind != GenKind::kLoopBack) {
        call.kind = GenKind::kCall;
        call.target = entry[f + 1 + rng.Below(kFunctions - 1 - f)];
      }
    }
  }
  p.main_entry = entry[0];
  return p;
}

}  // namespace backstep::core::testing
