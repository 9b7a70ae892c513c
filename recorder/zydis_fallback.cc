#include "recorder/zydis_fallback.h"

#include <Zydis/Zydis.h>
#include <capstone/capstone.h>

#include <algorithm>
#include <optional>

namespace backstep::record {
namespace {

// Zydis's general-purpose register to capstone's (x86_reg), 0 if none: the
// registers an address can be built from in 64-bit mode.
std::uint16_t CapstoneReg(ZydisRegister r) {
  static constexpr x86_reg k64[] = {X86_REG_RAX, X86_REG_RCX, X86_REG_RDX, X86_REG_RBX,
                                    X86_REG_RSP, X86_REG_RBP, X86_REG_RSI, X86_REG_RDI,
                                    X86_REG_R8,  X86_REG_R9,  X86_REG_R10, X86_REG_R11,
                                    X86_REG_R12, X86_REG_R13, X86_REG_R14, X86_REG_R15};
  static constexpr x86_reg k32[] = {X86_REG_EAX,  X86_REG_ECX,  X86_REG_EDX,  X86_REG_EBX,
                                    X86_REG_ESP,  X86_REG_EBP,  X86_REG_ESI,  X86_REG_EDI,
                                    X86_REG_R8D,  X86_REG_R9D,  X86_REG_R10D, X86_REG_R11D,
                                    X86_REG_R12D, X86_REG_R13D, X86_REG_R14D, X86_REG_R15D};
  if (r >= ZYDIS_REGISTER_RAX && r <= ZYDIS_REGISTER_R15) return k64[r - ZYDIS_REGISTER_RAX];
  if (r >= ZYDIS_REGISTER_EAX && r <= ZYDIS_REGISTER_R15D) return k32[r - ZYDIS_REGISTER_EAX];
  if (r == ZYDIS_REGISTER_FS) return X86_REG_FS;
  if (r == ZYDIS_REGISTER_GS) return X86_REG_GS;
  return 0;  // none, or cs/ds/es/ss (base 0 in 64-bit mode)
}

// The lanes of gather `insn` (VSIB operand `vsib`), or nullopt when it is
// not one of the gathers (vgatherpf*: prefetches).
std::optional<Decoded::Gather> GatherOf(const ZydisDecodedInstruction& insn,
                                        const ZydisDecodedOperand* ops,
                                        const ZydisDecodedOperand& vsib) {
  Decoded::Gather g;
  switch (insn.mnemonic) {  // V[P]GATHER<index size><element size>
    case ZYDIS_MNEMONIC_VPGATHERDD:
    case ZYDIS_MNEMONIC_VGATHERDPS:
      g.index_size = 4, g.element_size = 4;
      break;
    case ZYDIS_MNEMONIC_VPGATHERDQ:
    case ZYDIS_MNEMONIC_VGATHERDPD:
      g.index_size = 4, g.element_size = 8;
      break;
    case ZYDIS_MNEMONIC_VPGATHERQD:
    case ZYDIS_MNEMONIC_VGATHERQPS:
      g.index_size = 8, g.element_size = 4;
      break;
    case ZYDIS_MNEMONIC_VPGATHERQQ:
    case ZYDIS_MNEMONIC_VGATHERQPD:
      g.index_size = 8, g.element_size = 8;
      break;
    default:
      return std::nullopt;
  }
  // Operands: the destination, then (EVEX) the opmask or the VSIB operand
  // and (VEX) the mask vector.
  const ZydisRegister destination = ops[0].reg.value;
  ZydisRegister mask = ZYDIS_REGISTER_NONE;
  if (insn.encoding == ZYDIS_INSTRUCTION_ENCODING_EVEX) {
    mask = insn.avx.mask.reg;
    g.opmask = true;
  } else if (insn.operand_count > 2 && ops[2].type == ZYDIS_OPERAND_TYPE_REGISTER) {
    mask = ops[2].reg.value;
  }
  const ZydisRegister index = vsib.mem.index;
  if (mask == ZYDIS_REGISTER_NONE || ZydisRegisterGetId(index) < 0 ||
      ZydisRegisterGetId(mask) < 0) {
    return std::nullopt;
  }
  g.index_register = static_cast<std::uint8_t>(ZydisRegisterGetId(index));
  g.mask_register = static_cast<std::uint8_t>(ZydisRegisterGetId(mask));
  const unsigned destination_bytes =
      ZydisRegisterGetWidth(ZYDIS_MACHINE_MODE_LONG_64, destination) / 8;
  const unsigned index_bytes = ZydisRegisterGetWidth(ZYDIS_MACHINE_MODE_LONG_64, index) / 8;
  g.lanes = static_cast<std::uint8_t>(
      std::min(destination_bytes / g.element_size, index_bytes / g.index_size));
  return g.lanes ? std::optional(g) : std::nullopt;
}

}  // namespace

bool DecodeWithZydis(core::Address pc, std::span<const std::uint8_t> bytes, Decoded* d) {
  ZydisDecoder decoder;
  if (!ZYAN_SUCCESS(ZydisDecoderInit(&decoder, ZYDIS_MACHINE_MODE_LONG_64, ZYDIS_STACK_WIDTH_64)))
    return false;
  ZydisDecodedInstruction insn;
  ZydisDecodedOperand ops[ZYDIS_MAX_OPERAND_COUNT];
  if (!ZYAN_SUCCESS(ZydisDecoderDecodeFull(&decoder, bytes.data(), bytes.size(), &insn, ops)))
    return false;
  d->size = insn.length;
  d->fp = true;  // the fallback's instructions are SIMD or mask-register ones
  const bool masked = insn.avx.mask.mode == ZYDIS_MASK_MODE_MERGING ||
                      insn.avx.mask.mode == ZYDIS_MASK_MODE_ZEROING;
  const bool broadcast = insn.avx.broadcast.mode != ZYDIS_BROADCAST_MODE_INVALID;
  for (std::uint8_t i = 0; i < insn.operand_count; ++i) {
    const ZydisDecodedOperand& op = ops[i];
    if (op.type != ZYDIS_OPERAND_TYPE_MEMORY) continue;
    const bool reads = (op.actions & (ZYDIS_OPERAND_ACTION_READ | ZYDIS_OPERAND_ACTION_CONDREAD));
    const bool writes =
        (op.actions & (ZYDIS_OPERAND_ACTION_WRITE | ZYDIS_OPERAND_ACTION_CONDWRITE));
    if (op.mem.type != ZYDIS_MEMOP_TYPE_MEM && op.mem.type != ZYDIS_MEMOP_TYPE_VSIB)
      continue;  // lea's AGEN, MIB: no data
    Decoded::MemOperand m;
    m.base = CapstoneReg(op.mem.base);
    m.index = CapstoneReg(op.mem.index);
    m.segment = CapstoneReg(op.mem.segment);
    m.scale = std::max<std::uint8_t>(op.mem.scale, 1);
    m.disp = op.mem.disp.has_displacement ? op.mem.disp.value : 0;
    if (op.mem.base == ZYDIS_REGISTER_RIP) m.disp += static_cast<std::int64_t>(pc + insn.length);
    // A broadcast operand is one element; bits to bytes.
    const std::uint32_t bits =
        broadcast && op.element_size ? op.element_size : static_cast<std::uint32_t>(op.size);
    m.size = std::max<std::uint32_t>(bits / 8, 1);
    if (op.mem.type == ZYDIS_MEMOP_TYPE_VSIB) {
      // A scatter's writes are found by the diff; a gather's reads are its lanes.
      d->unknown_writes |= writes;
      if (reads) {
        d->gather = GatherOf(insn, ops, op);
        if (d->gather) {
          d->gather->address = m;
          d->gather->address.index = 0;
        }
        d->unknown_reads |= !d->gather;
      }
      continue;
    }
    const ZydisRegister opmask = insn.avx.mask.reg;
    if (reads && masked && !broadcast && opmask > ZYDIS_REGISTER_K0 &&
        opmask <= ZYDIS_REGISTER_K7 && op.element_size >= 8 &&
        m.size % (op.element_size / 8) == 0) {
      d->masked_reads.push_back({m, static_cast<std::uint8_t>(op.element_size / 8),
                                 static_cast<std::uint8_t>(opmask - ZYDIS_REGISTER_K0)});
    } else if (reads) {
      d->reads.push_back(m);
    }
    if (writes) {
      m.maybe = masked || !(op.actions & ZYDIS_OPERAND_ACTION_WRITE);
      d->writes.push_back(m);
    }
  }
  return true;
}

}  // namespace backstep::record
