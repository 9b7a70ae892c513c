// Instruction semantics for the provenance chain (see the header).
//
// Why capstone's regs_access and not operand access flags for registers:
// it lists implicit operands too (pop writes rsp, lodsb writes rsi, cpuid
// writes eax..edx), and its register access is right where capstone 4's
// memory access flags are not (vector stores say "read": the chain takes
// the destination of a move from the operand order instead).
#include "queries/x86_dataflow.h"

#include <capstone/capstone.h>

#include <algorithm>
#include <optional>
#include <string_view>

#include "backstep/core/hex.h"

namespace backstep::core::x86 {
namespace {

// VEX (c4/c5) or EVEX (62, always EVEX in 64-bit mode) encoded: such a
// vector write zeroes the register's bits above the operand.
bool IsVexEncoded(const cs_insn& insn) {
  std::size_t i = 0;
  auto legacy_prefix = [](std::uint8_t b) {
    return b == 0x66 || b == 0xf2 || b == 0xf3 || b == 0xf0 || b == 0x2e || b == 0x3e ||
           b == 0x26 || b == 0x64 || b == 0x65 || b == 0x36 || b == 0x67;
  };
  while (i < insn.size && legacy_prefix(insn.bytes[i])) ++i;
  return i < insn.size && (insn.bytes[i] == 0xc4 || insn.bytes[i] == 0xc5 || insn.bytes[i] == 0x62);
}

bool IsStringMove(unsigned id) {
  switch (id) {
    case X86_INS_MOVSB:
    case X86_INS_MOVSW:
    case X86_INS_MOVSQ:
      return true;
    default:
      return false;
  }
}

bool IsStringStore(unsigned id) {
  switch (id) {
    case X86_INS_STOSB:
    case X86_INS_STOSW:
    case X86_INS_STOSD:
    case X86_INS_STOSQ:
      return true;
    default:
      return false;
  }
}

// Data movement: the destination receives (part of) the source unchanged.
bool IsMove(const cs_insn& insn, std::string_view mnemonic) {
  if (IsStringMove(insn.id) || IsStringStore(insn.id)) return true;
  switch (insn.id) {
    case X86_INS_XCHG:
    case X86_INS_PUSH:
    case X86_INS_POP:
    case X86_INS_LODSB:
    case X86_INS_LODSW:
    case X86_INS_LODSD:
    case X86_INS_LODSQ:
      return true;
    default:
      break;
  }
  // mov, movzx/movsx, movd/movq, movaps/movups/movdqu, vmov*, cmov*.
  return mnemonic.starts_with("mov") || mnemonic.starts_with("vmov") ||
         mnemonic.starts_with("cmov");
}

// A memory operand's address in the state `before`; nullopt when a
// register it needs is unknown.
std::optional<Address> EvaluateAddress(const cs_insn& insn, const cs_x86_op& op,
                                       const RegisterFile& before) {
  std::uint64_t address = static_cast<std::uint64_t>(op.mem.disp);
  auto add = [&](unsigned reg, std::uint64_t scale) -> bool {
    if (reg == X86_REG_INVALID) return true;
    if (reg == X86_REG_RIP) {
      address += (insn.address + insn.size) * scale;
      return true;
    }
    auto bytes = BytesOf(reg);
    auto v = bytes ? ReadInteger(before, *bytes) : std::nullopt;
    if (!v) return false;
    address += *v * scale;
    return true;
  };
  if (!add(op.mem.base, 1) || !add(op.mem.index, static_cast<std::uint64_t>(op.mem.scale))) {
    return std::nullopt;
  }
  if (auto base = SegmentBaseOf(op.mem.segment)) {
    if (!before.known(*base)) return std::nullopt;
    address += before.u64(*base);
  }
  return address;
}

std::string_view MnemonicOf(const cs_insn& insn) {
  std::string_view m = insn.mnemonic;
  for (std::string_view prefix : {"rep ", "repe ", "repne ", "lock ", "notrack ", "bnd "}) {
    if (m.starts_with(prefix)) m.remove_prefix(prefix.size());
  }
  return m;
}

SourceOfWrite End(std::string why) {
  SourceOfWrite out;
  out.end = std::move(why);
  return out;
}

}  // namespace

Decoder::Decoder() {
  csh h = 0;
  if (cs_open(CS_ARCH_X86, CS_MODE_64, &h) != CS_ERR_OK) return;
  cs_option(h, CS_OPT_DETAIL, CS_OPT_ON);
  handle_ = h;
}

Decoder::~Decoder() {
  if (insn_) cs_free(insn_, 1);
  csh h = handle_;
  if (h) cs_close(&h);
}

const cs_insn* Decoder::Decode(std::span<const std::uint8_t> bytes, Address pc) {
  if (insn_) cs_free(insn_, 1);
  insn_ = nullptr;
  if (!handle_ || cs_disasm(handle_, bytes.data(), bytes.size(), pc, 1, &insn_) != 1) {
    insn_ = nullptr;
  }
  return insn_;
}

bool Decoder::WritesRegister(const cs_insn& insn, const RegisterBytes& location) const {
  cs_regs read, written;
  std::uint8_t read_count = 0, write_count = 0;
  if (cs_regs_access(handle_, &insn, read, &read_count, written, &write_count) != CS_ERR_OK) {
    return true;  // cannot tell: stop the search here rather than skip a writer
  }
  const bool vex = IsVexEncoded(insn);
  for (std::uint8_t i = 0; i < write_count; ++i) {
    auto bytes = WrittenBytesOf(written[i], vex);
    if (bytes && bytes->Overlaps(location)) return true;
  }
  return false;
}

std::string Decoder::RegisterName(unsigned reg) const {
  const char* n = cs_reg_name(handle_, reg);
  return n ? n : "";
}

std::string InstructionText(const cs_insn& insn) {
  return std::string(insn.mnemonic) + (insn.op_str[0] ? " " : "") + std::string(insn.op_str);
}

SourceOfWrite SourceOf(const Decoder& decoder, const cs_insn& insn, const RegisterFile& before,
                       const Followed& current, Address write_start) {
  const std::string_view mnemonic = MnemonicOf(insn);
  const cs_x86& x86 = insn.detail->x86;
  if (insn.id == X86_INS_CALL) return End("return address of call");
  const std::string computed = "computed by " + std::string(mnemonic);
  if (!IsMove(insn, mnemonic) || x86.op_count == 0 || x86.op_count > 2) return End(computed);
  const bool to_memory = !current.location.is_register;

  // The destination operand (the one that holds `current`) and the source.
  const cs_x86_op* dest = nullptr;
  const cs_x86_op* src = nullptr;
  cs_x86_op stack_top{};  // pop's source: [rsp] before the pop
  auto holds = [&](const cs_x86_op& op) {
    if (to_memory) return op.type == X86_OP_MEM;
    if (op.type != X86_OP_REG) return false;
    auto bytes = BytesOf(op.reg);
    return bytes && bytes->Overlaps(current.reg);
  };
  if (insn.id == X86_INS_PUSH) {
    if (!to_memory) return End(computed);
    src = &x86.operands[0];
  } else if (insn.id == X86_INS_POP) {
    if (!holds(x86.operands[0])) return End(computed);
    dest = &x86.operands[0];
    stack_top.type = X86_OP_MEM;
    stack_top.mem.base = X86_REG_RSP;
    stack_top.mem.index = X86_REG_INVALID;
    stack_top.mem.segment = X86_REG_INVALID;
    stack_top.mem.scale = 1;
    stack_top.size = dest->size;
    src = &stack_top;
  } else if (x86.op_count == 2) {
    const cs_x86_op& a = x86.operands[0];
    const cs_x86_op& b = x86.operands[1];
    if (insn.id == X86_INS_XCHG && !holds(a) && holds(b)) {
      dest = &b;
      src = &a;
    } else {
      if (!holds(a)) return End(computed);
      dest = &a;
      src = &b;
    }
  } else {
    return End(computed);
  }

  // Which bytes of the destination the chain follows: [offset, offset + size).
  std::uint64_t offset = 0;
  std::uint64_t size = current.location.length;
  const bool string_op = IsStringMove(insn.id) || IsStringStore(insn.id);
  if (to_memory) {
    std::optional<Address> at =
        dest && !string_op ? EvaluateAddress(insn, *dest, before) : std::optional<Address>();
    const Address start = at ? *at : write_start;
    const std::uint64_t dest_size = dest && !string_op ? std::max<std::uint64_t>(dest->size, 1) : 0;
    if (current.location.address < start ||
        (dest_size && current.location.address >= start + dest_size)) {
      return End("recorded write at " + HexU64(current.location.address) +
                 " is not this instruction's destination " + HexU64(start));
    }
    offset = current.location.address - start;
    if (dest_size) size = std::min(size, dest_size - offset);
  } else {
    auto dest_bytes = BytesOf(dest->reg);
    auto at = dest_bytes ? dest_bytes->OffsetOf(current.reg.slices.front()) : std::nullopt;
    if (!at) return End("zero-extended by " + std::string(mnemonic));
    offset = *at;
    size = std::min<std::uint64_t>(size, dest_bytes->size() - offset);
  }
  // A store of a register repeated (rep stos) repeats its bytes.
  if (string_op && src->type == X86_OP_REG && src->size) offset %= src->size;

  const std::uint64_t src_size = string_op && src->type == X86_OP_MEM
                                     ? offset + size  // movs: as many elements as it copied
                                     : std::max<std::uint64_t>(src->size, 1);
  if (src->type != X86_OP_IMM && offset >= src_size) {
    return End("extension by " + std::string(mnemonic));
  }
  size = std::min(size, src_size - offset);

  SourceOfWrite out;
  switch (src->type) {
    case X86_OP_IMM:
      return End("immediate " + HexU64(static_cast<std::uint64_t>(src->imm)));
    case X86_OP_REG: {
      auto bytes = BytesOf(src->reg);
      const std::string name = decoder.RegisterName(src->reg);
      if (!bytes) return End("register " + name + " (not recorded)");
      out.next.location.is_register = true;
      out.next.location.reg = name;
      out.next.reg =
          bytes->Sub(static_cast<std::uint32_t>(offset), static_cast<std::uint32_t>(size));
      out.next.location.length = out.next.reg.size();
      return out;
    }
    case X86_OP_MEM: {
      auto address = EvaluateAddress(insn, *src, before);
      if (!address) return End("source address unknown (" + std::string(insn.op_str) + ")");
      out.next.location.address = *address + offset;
      out.next.location.length = std::max<std::uint64_t>(size, 1);
      return out;
    }
    default:
      return End(computed);
  }
}

}  // namespace backstep::core::x86
