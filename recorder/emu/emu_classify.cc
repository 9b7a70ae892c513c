// Which instructions the CPU runs rather than Unicorn (emu_classify.h).
#include "recorder/emu/emu_classify.h"

#include <cstring>
#include <string>

#include "recorder/emu/native_flags.h"

namespace backstep::record {
namespace {

// Instructions that leave some arithmetic flags "undefined": the real CPU
// and QEMU's TCG set them differently, so the CPU runs them (NativeInsn in
// the recorder, or the tracee: see EmuSession::OnCode()). AND/OR/XOR/TEST leave AF
// undefined too, but both clear it (the cross-check test would see it).
bool UndefinedFlags(unsigned id) {
  switch (id) {
    case X86_INS_MUL:
    case X86_INS_IMUL:
    case X86_INS_DIV:
    case X86_INS_IDIV:
    case X86_INS_BSF:
    case X86_INS_BSR:
    case X86_INS_BT:
    case X86_INS_BTS:
    case X86_INS_BTR:
    case X86_INS_BTC:
    case X86_INS_SHL:
    case X86_INS_SAL:
    case X86_INS_SHR:
    case X86_INS_SAR:
    case X86_INS_ROL:
    case X86_INS_ROR:
    case X86_INS_RCL:
    case X86_INS_RCR:
    case X86_INS_SHLD:
    case X86_INS_SHRD:
    case X86_INS_TZCNT:
    case X86_INS_LZCNT:
    case X86_INS_ANDN:
    case X86_INS_BEXTR:
    case X86_INS_BLSI:
    case X86_INS_BLSR:
    case X86_INS_BLSMSK:
      return true;
    default:
      return false;
  }
}

// SSE arithmetic that sets MXCSR's exception flags, which QEMU 5's TCG
// does not: run natively too (see NativeStep()).
bool SetsSimdFlags(const char* mnemonic) {
  const std::string m = mnemonic;
  if (m.rfind("cvt", 0) == 0) return true;
  const std::size_t n = m.size();
  if (n < 4) return false;
  const std::string suffix = m.substr(n - 2);
  if (suffix != "ss" && suffix != "sd" && suffix != "ps" && suffix != "pd") return false;
  for (const char* p : {"add", "sub", "mul", "div", "sqrt", "min", "max", "comis", "ucomis", "cmp",
                        "round", "dp", "hadd", "hsub"}) {
    if (m.rfind(p, 0) == 0) return true;
  }
  return false;
}

}  // namespace

PcInfo ClassifyInsn(csh capstone, core::Address pc, std::span<const std::uint8_t> bytes,
                    const Decoded& d, const AddressSpace& space) {
  const std::size_t n = bytes.size();
  PcInfo info;
  info.fp = d.fp;
  info.rdtsc = d.rdtsc;
  info.rdtscp = d.rdtscp;
  cs_insn* insn = nullptr;
  const std::uint8_t* code = bytes.data();
  if (cs_disasm(capstone, code, n, pc, 1, &insn) == 1) {
    info.rep = std::strncmp(insn->mnemonic, "rep", 3) == 0;
    // x87 (escape opcodes d8-df) and the FXSAVE/XSAVE family: TCG keeps no
    // x87 instruction/operand pointers and fxsave stores zeros for them.
    const std::uint8_t op0 = insn->detail->x86.opcode[0];
    const bool x87 = (op0 >= 0xd8 && op0 <= 0xdf) || insn->id == X86_INS_FXSAVE ||
                     insn->id == X86_INS_FXSAVE64 || insn->id == X86_INS_FXRSTOR ||
                     insn->id == X86_INS_FXRSTOR64 || insn->id == X86_INS_XSAVE ||
                     insn->id == X86_INS_XSAVE64 || insn->id == X86_INS_XSAVEOPT ||
                     insn->id == X86_INS_XSAVEOPT64 || insn->id == X86_INS_XSAVEC ||
                     insn->id == X86_INS_XRSTOR || insn->id == X86_INS_XRSTOR64;
    info.simd_flags = d.fp && (x87 || SetsSimdFlags(insn->mnemonic));
    info.native = info.rep || UndefinedFlags(insn->id) || info.simd_flags;
    for (std::uint8_t i = 0; i < insn->detail->x86.op_count; ++i) {
      if (insn->detail->x86.operands[i].type == X86_OP_MEM) info.memory = true;
    }
    info.memory = info.memory || info.rep;
    info.in_process =
        !info.rep && !info.simd_flags && UndefinedFlags(insn->id) && NativeInsn::Suitable(*insn);
    if (info.in_process) {
      info.bytes.assign(bytes.begin(), bytes.end());
      const Mapping* m = space.Find(pc);
      info.writable = !m || m->write;
    }
    cs_free(insn, 1);
  }
  return info;
}

}  // namespace backstep::record
