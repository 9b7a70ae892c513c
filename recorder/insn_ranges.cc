// The memory ranges a decoded instruction wrote and read, from the
// registers before and after it (insn_decoder.h: InsnDecoder::Writes,
// InsnDecoder::Reads).
#include <capstone/capstone.h>

#include <array>
#include <cstring>

#include "recorder/insn_decoder.h"

namespace backstep::record {
namespace {

// Value of a capstone register in `r` (64-bit view for address arithmetic).
std::uint64_t RegValue(const user_regs_struct& r, unsigned reg) {
  switch (reg) {
    case X86_REG_RAX:
      return r.rax;
    case X86_REG_RBX:
      return r.rbx;
    case X86_REG_RCX:
      return r.rcx;
    case X86_REG_RDX:
      return r.rdx;
    case X86_REG_RSI:
      return r.rsi;
    case X86_REG_RDI:
      return r.rdi;
    case X86_REG_RBP:
      return r.rbp;
    case X86_REG_RSP:
      return r.rsp;
    case X86_REG_R8:
      return r.r8;
    case X86_REG_R9:
      return r.r9;
    case X86_REG_R10:
      return r.r10;
    case X86_REG_R11:
      return r.r11;
    case X86_REG_R12:
      return r.r12;
    case X86_REG_R13:
      return r.r13;
    case X86_REG_R14:
      return r.r14;
    case X86_REG_R15:
      return r.r15;
    case X86_REG_EAX:
      return r.rax & 0xffffffff;
    case X86_REG_EBX:
      return r.rbx & 0xffffffff;
    case X86_REG_ECX:
      return r.rcx & 0xffffffff;
    case X86_REG_EDX:
      return r.rdx & 0xffffffff;
    case X86_REG_ESI:
      return r.rsi & 0xffffffff;
    case X86_REG_EDI:
      return r.rdi & 0xffffffff;
    case X86_REG_EBP:
      return r.rbp & 0xffffffff;
    case X86_REG_ESP:
      return r.rsp & 0xffffffff;
    case X86_REG_R8D:
      return r.r8 & 0xffffffff;
    case X86_REG_R9D:
      return r.r9 & 0xffffffff;
    case X86_REG_R10D:
      return r.r10 & 0xffffffff;
    case X86_REG_R11D:
      return r.r11 & 0xffffffff;
    case X86_REG_R12D:
      return r.r12 & 0xffffffff;
    case X86_REG_R13D:
      return r.r13 & 0xffffffff;
    case X86_REG_R14D:
      return r.r14 & 0xffffffff;
    case X86_REG_R15D:
      return r.r15 & 0xffffffff;
    case X86_REG_FS:
      return r.fs_base;
    case X86_REG_GS:
      return r.gs_base;
    default:
      return 0;  // X86_REG_INVALID, cs/ds/es/ss (base 0 in 64-bit mode)
  }
}

// The address of memory operand `m` with the registers `r`.
std::uint64_t OperandAddress(const user_regs_struct& r, const Decoded::MemOperand& m) {
  return RegValue(r, m.base) + RegValue(r, m.index) * m.scale + static_cast<std::uint64_t>(m.disp) +
         RegValue(r, m.segment);
}

}  // namespace

void InsnDecoder::Writes(const Decoded& d, const user_regs_struct& before,
                         const user_regs_struct& after, std::vector<Range>* out) {
  const user_regs_struct& regs = d.pop ? after : before;
  for (const Decoded::MemOperand& m : d.writes) {
    out->push_back({OperandAddress(regs, m), m.size, m.maybe});
  }
  if (d.stack_push && after.rsp < before.rsp) out->push_back({after.rsp, before.rsp - after.rsp});
  if (d.string_write && after.rdi != before.rdi) {
    if (after.rdi > before.rdi) {
      out->push_back({before.rdi, after.rdi - before.rdi});
    } else {
      out->push_back({after.rdi + d.element, before.rdi - after.rdi});
    }
  }
}

void InsnDecoder::Reads(const Decoded& d, const user_regs_struct& before,
                        const user_regs_struct& after, std::vector<Range>* out) {
  for (const Decoded::MemOperand& m : d.reads) {
    out->push_back({OperandAddress(before, m), m.size});
  }
  if (d.stack_pop) out->push_back({before.rsp, 8});
  if (d.leave) out->push_back({before.rbp, 8});
  // A string step moves rsi/rdi by element per iteration, in either direction.
  const auto string_range = [&](std::uint64_t from, std::uint64_t to) {
    if (to > from) out->push_back({from, to - from});
    if (to < from) out->push_back({to + d.element, from - to});
  };
  if (d.string_read_rsi) string_range(before.rsi, after.rsi);
  if (d.string_read_rdi) string_range(before.rdi, after.rdi);
}

void InsnDecoder::GatherReads(const Decoded::Gather& g, const user_regs_struct& before,
                              const CpuLayout& layout, std::span<const std::uint8_t> xstate_before,
                              std::vector<Range>* out) {
  std::array<std::uint8_t, 64> index{}, mask{};
  layout.VectorRegister(xstate_before, g.index_register, index);
  const std::uint64_t opmask = g.opmask ? layout.Opmask(xstate_before, g.mask_register) : 0;
  if (!g.opmask) layout.VectorRegister(xstate_before, g.mask_register, mask);
  const std::uint64_t base = OperandAddress(before, g.address);
  for (unsigned lane = 0; lane < g.lanes; ++lane) {
    // The lane's mask: a bit of the opmask, or the top bit of its data-sized lane.
    const bool enabled =
        g.opmask ? (opmask >> lane) & 1 : (mask[(lane + 1) * g.element_size - 1] & 0x80) != 0;
    if (!enabled) continue;
    std::int64_t i = 0;
    if (g.index_size == 4) {
      std::int32_t i32 = 0;
      std::memcpy(&i32, &index[lane * 4], 4);
      i = i32;
    } else {
      std::memcpy(&i, &index[lane * 8], 8);
    }
    out->push_back({base + static_cast<std::uint64_t>(i) * g.address.scale, g.element_size});
  }
}

void InsnDecoder::MaskedReads(const Decoded::MaskedRead& m, const user_regs_struct& before,
                              std::uint64_t opmask, std::vector<Range>* out) {
  const std::uint64_t base = OperandAddress(before, m.address);
  const unsigned elements = m.address.size / m.element_size;
  for (unsigned i = 0; i < elements && i < 64;) {
    if (!((opmask >> i) & 1)) {
      ++i;
      continue;
    }
    unsigned end = i + 1;
    while (end < elements && end < 64 && ((opmask >> end) & 1)) ++end;
    out->push_back(
        {base + std::uint64_t{i} * m.element_size, std::uint64_t{end - i} * m.element_size});
    i = end;
  }
}

}  // namespace backstep::record
