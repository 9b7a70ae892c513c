#include "recorder/insn_decoder.h"

#include <capstone/capstone.h>
#include <cpuid.h>

#include <algorithm>
#include <string_view>

#include "recorder/zydis_fallback.h"

namespace backstep::record {
namespace {

bool IsVectorReg(unsigned reg) {
  return (reg >= X86_REG_XMM0 && reg <= X86_REG_XMM31) ||
         (reg >= X86_REG_YMM0 && reg <= X86_REG_YMM31) ||
         (reg >= X86_REG_ZMM0 && reg <= X86_REG_ZMM31);
}

bool IsFpGroup(unsigned g) {
  switch (g) {
    case X86_GRP_3DNOW:
    case X86_GRP_AES:
    case X86_GRP_AVX:
    case X86_GRP_AVX2:
    case X86_GRP_AVX512:
    case X86_GRP_F16C:
    case X86_GRP_FMA:
    case X86_GRP_FMA4:
    case X86_GRP_MMX:
    case X86_GRP_SHA:
    case X86_GRP_SSE1:
    case X86_GRP_SSE2:
    case X86_GRP_SSE3:
    case X86_GRP_SSE41:
    case X86_GRP_SSE42:
    case X86_GRP_SSE4A:
    case X86_GRP_SSSE3:
    case X86_GRP_PCLMUL:
    case X86_GRP_XOP:
    case X86_GRP_FPU:
    case X86_GRP_CDI:
    case X86_GRP_ERI:
    case X86_GRP_DQI:
    case X86_GRP_BWI:
    case X86_GRP_PFI:
    case X86_GRP_VLX:
      return true;
    default:
      return false;
  }
}

// Opcode bytes that touch FP/SIMD state whatever capstone's groups say:
// VEX/EVEX, x87 escapes, and the SIMD rows of the 0F map (prefixes skipped).
bool FpByOpcode(std::span<const std::uint8_t> b) {
  std::size_t i = 0;
  while (i < b.size() && (b[i] == 0x66 || b[i] == 0xf2 || b[i] == 0xf3 || b[i] == 0xf0 ||
                          b[i] == 0x2e || b[i] == 0x3e || b[i] == 0x26 || b[i] == 0x64 ||
                          b[i] == 0x65 || b[i] == 0x36 || b[i] == 0x67)) {
    ++i;
  }
  if (i < b.size() && (b[i] & 0xf0) == 0x40) ++i;  // REX
  if (i >= b.size()) return false;
  const std::uint8_t op = b[i];
  if (op == 0xc4 || op == 0xc5 || op == 0x62) return true;  // VEX, EVEX (64-bit mode)
  if (op >= 0xd8 && op <= 0xdf) return true;                // x87
  if (op != 0x0f || i + 1 >= b.size()) return false;
  const std::uint8_t o2 = b[i + 1];
  return (o2 >= 0x10 && o2 <= 0x17) || (o2 >= 0x28 && o2 <= 0x2f) || o2 == 0x38 || o2 == 0x3a ||
         (o2 >= 0x50 && o2 <= 0x7f) || o2 == 0xae || (o2 >= 0xc2 && o2 <= 0xc6) || o2 >= 0xd0;
}

// Whether the instruction is EVEX-encoded (62 after the legacy prefixes: in
// 64-bit mode 62 is always EVEX).
bool IsEvex(std::span<const std::uint8_t> b) {
  std::size_t i = 0;
  while (i < b.size() &&
         (b[i] == 0x66 || b[i] == 0xf2 || b[i] == 0xf3 || b[i] == 0x2e || b[i] == 0x3e ||
          b[i] == 0x26 || b[i] == 0x64 || b[i] == 0x65 || b[i] == 0x36 || b[i] == 0x67)) {
    ++i;
  }
  return i < b.size() && b[i] == 0x62;
}

// Instructions whose first operand, when in memory, is only read.
bool ReadsOnlyFirstOperand(unsigned id) {
  switch (id) {
    case X86_INS_CMP:
    case X86_INS_TEST:
    case X86_INS_BT:
    case X86_INS_PUSH:
    case X86_INS_CALL:
    case X86_INS_JMP:
    case X86_INS_LJMP:
    case X86_INS_LCALL:
    case X86_INS_NOP:
    case X86_INS_LEA:
    case X86_INS_PREFETCH:
    case X86_INS_PREFETCHNTA:
    case X86_INS_PREFETCHT0:
    case X86_INS_PREFETCHT1:
    case X86_INS_PREFETCHT2:
    case X86_INS_PREFETCHW:
    case X86_INS_CLFLUSH:
    case X86_INS_CLFLUSHOPT:
    case X86_INS_FXRSTOR:
    case X86_INS_FXRSTOR64:
    case X86_INS_XRSTOR:
    case X86_INS_XRSTOR64:
    case X86_INS_XRSTORS:
    case X86_INS_XRSTORS64:
    case X86_INS_LDMXCSR:
    case X86_INS_VLDMXCSR:
    case X86_INS_FLDCW:
    case X86_INS_FLDENV:
    case X86_INS_FLD:
    case X86_INS_FILD:
    case X86_INS_FBLD:
      return true;
    default:
      return false;
  }
}

// A memory operand that carries no data: an address only.
bool TouchesNoData(unsigned id) {
  switch (id) {
    case X86_INS_LEA:
    case X86_INS_NOP:
    case X86_INS_PREFETCH:
    case X86_INS_PREFETCHNTA:
    case X86_INS_PREFETCHT0:
    case X86_INS_PREFETCHT1:
    case X86_INS_PREFETCHT2:
    case X86_INS_PREFETCHW:
    case X86_INS_CLFLUSH:
    case X86_INS_CLFLUSHOPT:
    case X86_INS_CLWB:
      return true;
    default:
      return false;
  }
}

// Whether a first operand in memory is only written (a store): capstone 4
// marks many stores "read", so the mnemonic decides too.
bool StoresFirstOperand(const char* mnemonic, std::uint8_t access) {
  if ((access & CS_AC_WRITE) && !(access & CS_AC_READ)) return true;
  const std::string_view m(mnemonic);
  for (std::string_view p :
       {"mov",        "vmov",      "set",      "fst",       "fist",     "fnst",      "stmxcsr",
        "vstmxcsr",   "pextr",     "vpextr",   "extractps", "vextract", "vcvtps2ph", "vpmov",
        "vpcompress", "vcompress", "vmaskmov", "vpmaskmov", "xsave",    "fxsave",    "fsave",
        "sgdt",       "sidt",      "sldt",     "smsw",      "str"}) {
    if (m.substr(0, p.size()) == p) return true;
  }
  return false;
}

// A memory operand's address parts and size; rip-relative operands become
// absolute (`next_pc`: the address after the instruction).
Decoded::MemOperand MemOperandOf(const cs_x86_op& op, core::Address next_pc, std::uint32_t size) {
  Decoded::MemOperand m;
  m.base = static_cast<std::uint16_t>(op.mem.base);
  m.index = static_cast<std::uint16_t>(op.mem.index);
  m.segment = static_cast<std::uint16_t>(op.mem.segment);
  m.disp = op.mem.disp;
  m.scale = static_cast<std::uint8_t>(op.mem.scale);
  m.size = size;
  if (m.base == X86_REG_RIP) {
    m.base = 0;
    m.disp += static_cast<std::int64_t>(next_pc);
  }
  return m;
}

}  // namespace

InsnDecoder::InsnDecoder() {
  csh h = 0;
  cs_open(CS_ARCH_X86, CS_MODE_64, &h);
  cs_option(h, CS_OPT_DETAIL, CS_OPT_ON);
  handle_ = h;
  unsigned a = 0, b = 0, c = 0, d = 0;
  if (__get_cpuid_count(0xd, 0, &a, &b, &c, &d) && b != 0) xsave_size_ = b;
}

InsnDecoder::~InsnDecoder() {
  csh h = handle_;
  cs_close(&h);
}

const Decoded* InsnDecoder::Find(core::Address pc) const {
  auto it = cache_.find(pc);
  return it == cache_.end() ? nullptr : &it->second;
}

const Decoded& InsnDecoder::Decode(core::Address pc, std::span<const std::uint8_t> bytes) {
  Decoded& d = cache_[pc];
  d = Decoded();
  DecodeInto(pc, bytes, &d);
  return d;
}

void InsnDecoder::DecodeInto(core::Address pc, std::span<const std::uint8_t> bytes, Decoded* d) {
  // EVEX (AVX-512) and what capstone 4 cannot decode (kmov*, ...): Zydis,
  // whose operand actions are exact where capstone 4's are not.
  if (IsEvex(bytes) && DecodeWithZydis(pc, bytes, d)) return;
  cs_insn* insn = nullptr;
  const std::size_t n = cs_disasm(handle_, bytes.data(), bytes.size(), pc, 1, &insn);
  if (n == 0) {
    if (DecodeWithZydis(pc, bytes, d)) return;
    // Undecodable: the recorder diffs memory for its writes and reports it.
    d->unknown_writes = true;
    d->unknown_reads = true;
    d->fp = true;
    return;
  }
  const cs_insn& in = insn[0];
  const cs_x86& x = in.detail->x86;
  // A VSIB operand (AVX2 gather): Zydis describes its lanes.
  for (unsigned i = 0; i < x.op_count; ++i) {
    if (x.operands[i].type == X86_OP_MEM && IsVectorReg(x.operands[i].mem.index) &&
        DecodeWithZydis(pc, bytes, d)) {
      cs_free(insn, n);
      return;
    }
  }
  d->size = static_cast<std::uint8_t>(in.size);
  d->fp = FpByOpcode(bytes.first(in.size));
  for (unsigned g = 0; g < in.detail->groups_count; ++g) d->fp |= IsFpGroup(in.detail->groups[g]);
  std::uint32_t fixed_size = 0, read_size = 0;
  switch (in.id) {
    case X86_INS_SYSCALL:
      d->syscall = true;
      break;
    case X86_INS_PUSHF:
    case X86_INS_PUSHFQ:
    case X86_INS_PUSHFD:
      d->pushf = true;
      d->stack_push = true;
      break;
    case X86_INS_PUSH:
    case X86_INS_CALL:
    case X86_INS_ENTER:
      d->stack_push = true;
      break;
    case X86_INS_POP:
      d->pop = true;
      d->stack_pop = true;
      break;
    case X86_INS_RET:
    case X86_INS_POPF:
    case X86_INS_POPFQ:
    case X86_INS_IRET:
    case X86_INS_IRETQ:
      d->stack_pop = true;
      break;
    case X86_INS_LEAVE:
      d->leave = true;
      break;
    case X86_INS_LODSB:
    case X86_INS_LODSW:
    case X86_INS_LODSD:
    case X86_INS_LODSQ:
    case X86_INS_OUTSB:
    case X86_INS_OUTSW:
    case X86_INS_OUTSD:
      d->string_read_rsi = true;
      d->element = in.id == X86_INS_LODSB || in.id == X86_INS_OUTSB   ? 1
                   : in.id == X86_INS_LODSW || in.id == X86_INS_OUTSW ? 2
                   : in.id == X86_INS_LODSQ                           ? 8
                                                                      : 4;
      break;
    case X86_INS_SCASB:
    case X86_INS_SCASW:
    case X86_INS_SCASD:
    case X86_INS_SCASQ:
      d->string_read_rdi = true;
      d->element = in.id == X86_INS_SCASB   ? 1
                   : in.id == X86_INS_SCASW ? 2
                   : in.id == X86_INS_SCASQ ? 8
                                            : 4;
      break;
    case X86_INS_CMPSB:
    case X86_INS_CMPSW:
    case X86_INS_CMPSQ:
      d->string_read_rsi = d->string_read_rdi = true;
      d->element = in.id == X86_INS_CMPSB ? 1 : in.id == X86_INS_CMPSW ? 2 : 8;
      break;
    case X86_INS_CMPSD:
      // CMPSD is also the SSE scalar compare: only the operand-less form is a string op.
      if (x.op_count == 0 || (x.op_count == 2 && x.operands[0].type == X86_OP_MEM &&
                              x.operands[1].type == X86_OP_MEM)) {
        d->string_read_rsi = d->string_read_rdi = true;
        d->element = 4;
      }
      break;
    case X86_INS_FXRSTOR:
    case X86_INS_FXRSTOR64:
      read_size = 512;
      break;
    case X86_INS_XRSTOR:
    case X86_INS_XRSTOR64:
    case X86_INS_XRSTORS:
    case X86_INS_XRSTORS64:
      read_size = xsave_size_;
      break;
    case X86_INS_FRSTOR:
      read_size = 108;
      break;
    case X86_INS_FLDENV:
      read_size = 28;
      break;
    case X86_INS_STOSB:
    case X86_INS_MOVSB:
      d->string_write = true;
      d->element = 1;
      break;
    case X86_INS_STOSW:
    case X86_INS_MOVSW:
      d->string_write = true;
      d->element = 2;
      break;
    case X86_INS_STOSD:
    case X86_INS_MOVSD:
      // MOVSD is also the SSE scalar move: only the operand-less form is a string op.
      if (x.op_count == 0 || (x.op_count == 2 && x.operands[0].type == X86_OP_MEM &&
                              x.operands[1].type == X86_OP_MEM)) {
        d->string_write = true;
        d->string_read_rsi = true;
        d->element = 4;
      }
      break;
    case X86_INS_STOSQ:
    case X86_INS_MOVSQ:
      d->string_write = true;
      d->element = 8;
      break;
    case X86_INS_RDTSC:
      d->rdtsc = true;
      break;
    case X86_INS_RDTSCP:
      d->rdtscp = true;
      break;
    case X86_INS_CPUID:
      d->cpuid = true;
      break;
    case X86_INS_INT3:
    case X86_INS_INT:
    case X86_INS_INT1:
    case X86_INS_INTO:
      d->breakpoint = true;
      break;
    case X86_INS_FXSAVE:
    case X86_INS_FXSAVE64:
      fixed_size = 512;
      break;
    case X86_INS_XSAVE:
    case X86_INS_XSAVE64:
    case X86_INS_XSAVEC:
    case X86_INS_XSAVEC64:
    case X86_INS_XSAVEOPT:
    case X86_INS_XSAVEOPT64:
    case X86_INS_XSAVES:
    case X86_INS_XSAVES64:
      fixed_size = xsave_size_;
      d->fp = true;
      break;
    case X86_INS_FNSAVE:
      fixed_size = 108;
      break;
    case X86_INS_FNSTENV:
      fixed_size = 28;
      break;
    case X86_INS_MASKMOVDQU:
    case X86_INS_VMASKMOVDQU:
      d->writes.push_back({X86_REG_RDI, 0, 0, 0, 1, 16});
      break;
    case X86_INS_MASKMOVQ:
      d->writes.push_back({X86_REG_RDI, 0, 0, 0, 1, 8});
      break;
    default:
      break;
  }
  if (in.id == X86_INS_MOVSB || in.id == X86_INS_MOVSW || in.id == X86_INS_MOVSQ)
    d->string_read_rsi = true;
  const bool strings = d->string_write || d->string_read_rsi || d->string_read_rdi;
  for (unsigned i = 0; i < x.op_count; ++i) {
    const cs_x86_op& op = x.operands[i];
    if (op.type != X86_OP_MEM || strings || TouchesNoData(in.id)) continue;
    if (i == 0 && StoresFirstOperand(in.mnemonic, op.access)) continue;
    if (IsVectorReg(op.mem.index)) {
      d->unknown_reads = true;  // VSIB: a gather
      continue;
    }
    d->reads.push_back(MemOperandOf(op, pc + in.size,
                                    read_size ? read_size : std::max<std::uint32_t>(op.size, 1)));
  }
  for (unsigned i = 0; i < x.op_count; ++i) {
    const cs_x86_op& op = x.operands[i];
    if (op.type == X86_OP_REG && IsVectorReg(op.reg)) d->fp = true;
    if (op.type != X86_OP_MEM) continue;
    if (d->string_write) continue;  // covered by the rdi rule
    // capstone 4's "write" is right when present, its "read only" often
    // wrong (rol, cmpxchg, movnti, fstp, SIMD stores): a memory operand that
    // can be a destination (the first, in Intel order) is a maybe-write.
    // capstone 4 also says "write" for test's memory operand (f7 /0).
    const bool read_only = i != 0 || ReadsOnlyFirstOperand(in.id);
    const bool write =
        ((op.access & CS_AC_WRITE) != 0 && !(i == 0 && ReadsOnlyFirstOperand(in.id))) ||
        fixed_size != 0;
    if (!write && read_only) continue;
    if (IsVectorReg(op.mem.index)) {
      d->unknown_writes = true;  // VSIB: a scatter
      continue;
    }
    Decoded::MemOperand m = MemOperandOf(
        op, pc + in.size, fixed_size ? fixed_size : std::max<std::uint32_t>(op.size, 1));
    m.maybe = !write;
    d->writes.push_back(m);
  }
  cs_free(insn, n);
}

}  // namespace backstep::record
