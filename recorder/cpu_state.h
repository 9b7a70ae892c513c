// CpuState: a stopped tracee's registers, as backstep's canonical registers.
//
// GPRs, eflags, selectors and fs/gs base come from PTRACE_GETREGS; x87, SSE
// and AVX state from NT_X86_XSTATE, fetched only when needed (the recorder
// asks after FP/SIMD instructions and syscalls). Collect() turns both into
// one RegisterWrite per tracked register, in a fixed order, so that two
// collections diff slot by slot.
//
// Normalisation of single-stepping artefacts: eflags loses RF (set after a
// fault inside `rep`, which the program never sees).
//
// AVX-512, when XCR0 enables it (cpuid 0xd): k0-7 (opmask component),
// zmm0h-zmm15h (ZMM_Hi256), xmm16-31, ymm16h-31h and zmm16h-31h (Hi16_ZMM),
// at the offsets cpuid gives for the standard XSAVE layout.
//
// Not tracked: rip (the sink derives it from pc and size), orig_rax and
// pkru (no Unicorn register carries it).
//
// Thread-safety: a value type.
#pragma once

#include <sys/user.h>

#include <cstdint>
#include <span>
#include <vector>

#include "backstep/core/register_file.h"

namespace backstep::record {

class CpuLayout {
 public:
  // Fixed slots of the GPR part, in the order CollectGprs fills them: rax,
  // rbx, rcx, rdx, rsi, rdi, rbp, rsp, r8-r15 (0-15), eflags, cs, ss, ds,
  // es, fs, gs, fs_base, gs_base.
  static constexpr std::size_t kEflagsSlot = 16, kFsBaseSlot = 23, kGsBaseSlot = 24;
  static constexpr std::size_t kGprSlots = 25;

  // Resolves the tracked registers in X86_64() and the XSAVE layout (cpuid).
  CpuLayout();
  std::size_t gpr_count() const { return gpr_count_; }
  std::size_t count() const { return ids_.size(); }
  // Registers from PTRACE_GETREGS into out[0, gpr_count()).
  void CollectGprs(const user_regs_struct& regs, std::span<core::RegisterWrite> out) const;
  // Registers from an XSAVE image into out[gpr_count(), count()).
  void CollectFp(std::span<const std::uint8_t> xstate, std::span<core::RegisterWrite> out) const;
  std::uint16_t size(std::size_t slot) const { return sizes_[slot]; }
  // Vector register v (0-31) from an XSAVE image: its zmm bytes into `out`
  // (the parts this CPU or image lacks are zero).
  void VectorRegister(std::span<const std::uint8_t> xstate, unsigned v,
                      std::span<std::uint8_t, 64> out) const;
  // Opmask register k (0-7) from an XSAVE image (0 without AVX-512).
  std::uint64_t Opmask(std::span<const std::uint8_t> xstate, unsigned k) const;

 private:
  std::vector<core::RegisterId> ids_;
  std::vector<std::uint16_t> sizes_;
  std::size_t gpr_count_ = 0;
  std::uint32_t ymmh_offset_ = 576;
  bool avx_ = false;
  bool avx512_ = false;
  std::uint32_t opmask_offset_ = 0, zmmh_offset_ = 0, hi16_offset_ = 0;
};

// Appends to *out the slots in [first, last) whose value differs.
void DiffRegisters(const CpuLayout& layout, std::span<const core::RegisterWrite> before,
                   std::span<const core::RegisterWrite> after, std::size_t first, std::size_t last,
                   std::vector<core::RegisterWrite>* out);

// The full x87 tag word (2 bits per physical register) from FXSAVE's
// abridged one, as FSAVE stores it. `st` holds ST(0..7), 16 bytes apart.
std::uint16_t FullTagWord(std::uint8_t abridged, std::uint16_t fsw, const std::uint8_t* st);

}  // namespace backstep::record
