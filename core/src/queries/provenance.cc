// Origin: the provenance chain of a value (see provenance.h for the rules).
//
// Why capstone here: the index knows *that* event w wrote bytes, not where
// the value came from; only the instruction's operands say that, so each
// step decodes the writer at its pc in the state before it and evaluates the
// source operand with the registers of that state.
#include "backstep/core/provenance.h"

#include <capstone/capstone.h>

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <cstring>

#include "backstep/core/cursor.h"
#include "backstep/core/register_queries.h"
#include "backstep/core/search.h"
#include "backstep/core/trace.h"

namespace backstep::core {
namespace {

std::string Hex(std::uint64_t v) {
  char buf[24];
  std::snprintf(buf, sizeof buf, "0x%" PRIx64, v);
  return buf;
}

// A capstone register as pieces of the arch table: the bytes
// [offset, offset + size) of the concatenation of `ids`.
struct RegRef {
  std::vector<RegisterId> ids;
  unsigned offset = 0;
  unsigned size = 0;
};

// Maps capstone's names ("eax", "r9b", "ah", "ymm3") onto the table's
// registers ("rax", "r9", "xmm3" + "ymm3h"). nullopt for registers backstep
// does not record (k0-7, zmm, xmm16-31, ...).
std::optional<RegRef> ResolveRegister(const ArchDescription& arch, std::string_view name) {
  static const char* const kLegacy[][5] = {
      // 64, 32, 16, low 8, high 8
      {"rax", "eax", "ax", "al", "ah"}, {"rbx", "ebx", "bx", "bl", "bh"},
      {"rcx", "ecx", "cx", "cl", "ch"}, {"rdx", "edx", "dx", "dl", "dh"},
      {"rsi", "esi", "si", "sil", ""},  {"rdi", "edi", "di", "dil", ""},
      {"rbp", "ebp", "bp", "bpl", ""},  {"rsp", "esp", "sp", "spl", ""},
      {"rip", "eip", "ip", "", ""},
  };
  static const unsigned kSizes[] = {8, 4, 2, 1, 1};
  auto full = [&](std::string_view n, unsigned offset, unsigned size) -> std::optional<RegRef> {
    auto id = arch.Find(n);
    if (!id) return std::nullopt;
    return RegRef{{*id}, offset, size};
  };
  for (const auto& row : kLegacy) {
    for (int i = 0; i < 5; ++i) {
      if (row[i][0] != '\0' && name == row[i]) return full(row[0], i == 4 ? 1 : 0, kSizes[i]);
    }
  }
  if (name.size() >= 2 && name[0] == 'r' && name[1] >= '0' && name[1] <= '9') {
    std::size_t digits = 1;
    while (digits + 1 < name.size() && name[digits + 1] >= '0' && name[digits + 1] <= '9') ++digits;
    const std::string base(name.substr(0, 1 + digits));
    const std::string_view suffix = name.substr(1 + digits);
    if (suffix.empty()) return full(base, 0, 8);
    if (suffix == "d") return full(base, 0, 4);
    if (suffix == "w") return full(base, 0, 2);
    if (suffix == "b") return full(base, 0, 1);
    return std::nullopt;
  }
  if (name.starts_with("xmm")) return full(name, 0, 16);
  if (name.starts_with("ymm")) {
    const std::string n(name.substr(3));
    auto lo = arch.Find("xmm" + n);
    auto hi = arch.Find("ymm" + n + "h");
    if (!lo || !hi) return std::nullopt;
    return RegRef{{*lo, *hi}, 0, 32};
  }
  return std::nullopt;
}

// The register's bytes in `regs`; known[i] per byte.
void ReadRegister(const RegisterFile& regs, const RegRef& ref, std::vector<std::uint8_t>& value,
                  std::vector<std::uint8_t>& known) {
  std::vector<std::uint8_t> all, all_known;
  for (RegisterId id : ref.ids) {
    std::vector<std::uint8_t> piece(regs.arch().info(id).size);
    const bool k = regs.Read(id, piece);
    all.insert(all.end(), piece.begin(), piece.end());
    all_known.insert(all_known.end(), piece.size(), k ? 1 : 0);
  }
  value.assign(all.begin() + ref.offset, all.begin() + ref.offset + ref.size);
  known.assign(all_known.begin() + ref.offset, all_known.begin() + ref.offset + ref.size);
}

// The register as an integer (address arithmetic); nullopt when unknown.
std::optional<std::uint64_t> RegisterValue(const RegisterFile& regs, const RegRef& ref) {
  std::vector<std::uint8_t> value, known;
  ReadRegister(regs, ref, value, known);
  if (value.size() > 8) return std::nullopt;
  std::uint64_t v = 0;
  for (std::size_t i = value.size(); i-- > 0;) {
    if (!known[i]) return std::nullopt;
    v = (v << 8) | value[i];
  }
  return v;
}

class Disassembler {
 public:
  Disassembler() {
    if (cs_open(CS_ARCH_X86, CS_MODE_64, &handle_) != CS_ERR_OK) {
      handle_ = 0;
      return;
    }
    cs_option(handle_, CS_OPT_DETAIL, CS_OPT_ON);
  }
  ~Disassembler() {
    if (insn_) cs_free(insn_, 1);
    if (handle_) cs_close(&handle_);
  }
  Disassembler(const Disassembler&) = delete;
  Disassembler& operator=(const Disassembler&) = delete;

  const cs_insn* Decode(std::span<const std::uint8_t> bytes, Address pc) {
    if (!handle_) return nullptr;
    if (insn_) cs_free(insn_, 1);
    insn_ = nullptr;
    if (cs_disasm(handle_, bytes.data(), bytes.size(), pc, 1, &insn_) != 1) {
      insn_ = nullptr;
      return nullptr;
    }
    return insn_;
  }
  std::string RegName(unsigned reg) const {
    const char* n = cs_reg_name(handle_, reg);
    return n ? n : "";
  }

 private:
  csh handle_ = 0;
  cs_insn* insn_ = nullptr;
};

// What the chain follows next: a location, or why it ends.
struct Source {
  OriginLocation location;
  std::optional<RegRef> reg;
  std::string end;
};

bool IsMove(std::string_view m) {
  return m.starts_with("mov") || m.starts_with("vmov") || m.starts_with("cmov") ||
         m.starts_with("stos") || m.starts_with("lods") || m == "xchg" || m == "push" || m == "pop";
}

// The piece (offset, size) of the written operand the chain follows, for
// memory locations: [lo, hi) of a write that started at `write_start`.
struct Piece {
  std::uint64_t offset = 0;
  std::uint64_t size = 0;
};

Source FindSource(const Disassembler& dis, const cs_insn& insn, const RegisterFile& before,
                  const Source& current, Piece piece) {
  const ArchDescription& arch = before.arch();
  std::string_view mnemonic = insn.mnemonic;
  for (std::string_view prefix : {"rep ", "repe ", "repne ", "lock ", "notrack ", "bnd "}) {
    if (mnemonic.starts_with(prefix)) mnemonic.remove_prefix(prefix.size());
  }
  const cs_x86& x86 = insn.detail->x86;
  Source out;
  if (mnemonic == "call") {
    out.end = "return address of call";
    return out;
  }
  if (!IsMove(mnemonic) || x86.op_count == 0 || x86.op_count > 2) {
    out.end = "computed by " + std::string(mnemonic);
    return out;
  }
  const cs_x86_op* src = nullptr;
  cs_x86_op pop_source{};
  const bool location_is_memory = !current.location.is_register;
  auto same_register = [&](const cs_x86_op& op) {
    if (op.type != X86_OP_REG || !current.reg) return false;
    auto ref = ResolveRegister(arch, dis.RegName(op.reg));
    return ref && ref->ids.front() == current.reg->ids.front();
  };
  if (mnemonic == "push") {
    if (!location_is_memory) {
      out.end = "computed by push";
      return out;
    }
    src = &x86.operands[0];
  } else if (mnemonic == "pop") {
    if (location_is_memory || !same_register(x86.operands[0])) {
      out.end = "computed by pop";
      return out;
    }
    // pop reg: the value came from [rsp] before the pop.
    pop_source.type = X86_OP_MEM;
    pop_source.mem.base = X86_REG_RSP;
    pop_source.mem.index = X86_REG_INVALID;
    pop_source.mem.segment = X86_REG_INVALID;
    pop_source.mem.scale = 1;
    pop_source.size = x86.operands[0].size;
    src = &pop_source;
  } else if (x86.op_count == 2) {
    const cs_x86_op& a = x86.operands[0];
    const cs_x86_op& b = x86.operands[1];
    if (mnemonic == "xchg") {
      // Either operand was written; the source is the other one.
      if (location_is_memory) {
        src = a.type == X86_OP_MEM ? &b : &a;
      } else {
        src = same_register(a) ? &b : &a;
      }
    } else {
      const bool dest_matches = location_is_memory ? a.type == X86_OP_MEM : same_register(a);
      if (!dest_matches) {
        out.end = "computed by " + std::string(mnemonic);
        return out;
      }
      src = &b;
    }
  } else {
    out.end = "computed by " + std::string(mnemonic);
    return out;
  }

  switch (src->type) {
    case X86_OP_IMM:
      out.end = "immediate " + Hex(static_cast<std::uint64_t>(src->imm));
      return out;
    case X86_OP_REG: {
      const std::string name = dis.RegName(src->reg);
      auto ref = ResolveRegister(arch, name);
      if (!ref) {
        out.end = "register " + name + " (not recorded)";
        return out;
      }
      out.location.is_register = true;
      out.location.reg = name;
      out.location.length = ref->size;
      out.reg = *ref;
      return out;
    }
    case X86_OP_MEM: {
      std::uint64_t address = static_cast<std::uint64_t>(src->mem.disp);
      auto add_reg = [&](unsigned reg, std::uint64_t scale) -> bool {
        if (reg == X86_REG_INVALID) return true;
        if (reg == X86_REG_RIP) {
          address += (insn.address + insn.size) * scale;
          return true;
        }
        auto ref = ResolveRegister(arch, dis.RegName(reg));
        auto v = ref ? RegisterValue(before, *ref) : std::nullopt;
        if (!v) return false;
        address += *v * scale;
        return true;
      };
      bool ok = add_reg(src->mem.base, 1) && add_reg(src->mem.index, src->mem.scale);
      if (ok && (src->mem.segment == X86_REG_FS || src->mem.segment == X86_REG_GS)) {
        auto seg = arch.Find(src->mem.segment == X86_REG_FS ? "fs_base" : "gs_base");
        ok = seg && before.known(*seg);
        if (ok) address += before.u64(*seg);
      }
      if (!ok) {
        out.end = "source address unknown (" + std::string(insn.op_str) + ")";
        return out;
      }
      out.location.address = address;
      out.location.length = src->size;
      // A memory-to-memory copy (movs) keeps the byte offsets of the piece
      // the chain follows.
      if (location_is_memory && piece.size != 0 && piece.offset + piece.size <= src->size) {
        out.location.address += piece.offset;
        out.location.length = piece.size;
      } else if (location_is_memory && piece.size != 0 && piece.offset < src->size) {
        out.location.address += piece.offset;
        out.location.length = src->size - piece.offset;
      }
      if (out.location.length == 0) out.location.length = 1;
      return out;
    }
    default:
      out.end = "computed by " + std::string(mnemonic);
      return out;
  }
}

}  // namespace

std::string OriginLocation::ToString() const {
  if (is_register) return reg;
  return "mem " + Hex(address) + "+" + std::to_string(length);
}

Expected<std::vector<OriginStep>> Origin(const Trace& trace, Address address, std::uint64_t length,
                                         Position at, unsigned depth,
                                         const std::atomic<bool>* interrupt) {
  if (at.value > trace.event_count()) {
    return Status::OutOfRange("position " + std::to_string(at.value) + " past the end (" +
                              std::to_string(trace.event_count()) + ")");
  }
  if (length == 0 || length > 4096) {
    return Status::InvalidArgument("origin: length must be 1..4096 bytes");
  }
  if (trace.arch().name() != "i386:x86-64") {
    return Status::Unsupported("origin: only x86-64 instructions are decoded");
  }
  BACKSTEP_ASSIGN_OR_RETURN(std::unique_ptr<Cursor> cursor, trace.AcquireCursor());
  struct Release {
    const Trace& trace;
    std::unique_ptr<Cursor>& cursor;
    ~Release() { trace.ReleaseCursor(std::move(cursor)); }
  } release{trace, cursor};
  Disassembler dis;

  std::vector<OriginStep> steps;
  Source current;
  current.location.address = address;
  current.location.length = length;
  ThreadId reg_thread;  // whose register a register location is
  Position before = at;

  auto read_location = [&](const Source& src, ThreadId thread, OriginStep& step) -> Status {
    if (src.location.is_register) {
      BACKSTEP_ASSIGN_OR_RETURN(const RegisterFile* regs, cursor->Registers(thread));
      ReadRegister(*regs, *src.reg, step.value, step.known);
      return Status();
    }
    step.value.assign(src.location.length, 0);
    step.known.assign(src.location.length, 0);
    return cursor->ReadMemory(src.location.address, step.value, step.known);
  };

  for (unsigned d = 0; d < depth; ++d) {
    if (interrupt && interrupt->load(std::memory_order_relaxed)) {
      return Status::Interrupted("origin interrupted");
    }
    OriginStep step;
    step.location = current.location;
    std::uint64_t w = 0;
    Piece piece;
    if (!current.location.is_register) {
      BACKSTEP_ASSIGN_OR_RETURN(
          std::optional<Access> access,
          LastWrite(trace, current.location.address, current.location.length, before));
      if (!access) {
        BACKSTEP_RETURN_IF_ERROR(cursor->Seek(before));
        step.thread = cursor->current_thread();
        BACKSTEP_RETURN_IF_ERROR(read_location(current, step.thread, step));
        step.end = "initial image";
        steps.push_back(std::move(step));
        break;
      }
      w = access->event;
      const Address lo = std::max(current.location.address, access->address);
      const Address hi = std::min(current.location.address + current.location.length,
                                  access->address + access->data.size());
      current.location.address = lo;
      current.location.length = hi > lo ? hi - lo : 1;
      step.location = current.location;
      piece = {lo - access->address, current.location.length};
    } else {
      std::span<const RegisterId> ids(current.reg->ids);
      BACKSTEP_ASSIGN_OR_RETURN(
          RegisterWriteSearch found,
          LastRegisterWrite(trace, reg_thread, ids, before, kDefaultRegisterScanEvents, interrupt));
      if (found.result == RegisterWriteSearch::Result::kNone ||
          found.result == RegisterWriteSearch::Result::kBeyondBound) {
        BACKSTEP_RETURN_IF_ERROR(cursor->Seek(before));
        step.thread = reg_thread;
        BACKSTEP_RETURN_IF_ERROR(read_location(current, reg_thread, step));
        step.end =
            found.result == RegisterWriteSearch::Result::kNone
                ? "initial registers"
                : "not found within " + std::to_string(kDefaultRegisterScanEvents) + " events";
        steps.push_back(std::move(step));
        break;
      }
      w = found.event;
      if (found.result == RegisterWriteSearch::Result::kCleared) {
        step.position = Position(w);
        step.thread = reg_thread;
        step.end = "registers cleared";
        steps.push_back(std::move(step));
        break;
      }
    }

    // The writer, in the state before it.
    step.position = Position(w);
    BACKSTEP_RETURN_IF_ERROR(cursor->Seek(Position(w)));
    const ThreadId thread = cursor->current_thread();
    step.thread = thread;
    step.pc = cursor->Pc(thread);
    BACKSTEP_ASSIGN_OR_RETURN(const Event* event, cursor->CurrentEvent());
    const EventKind kind = event->kind;
    BACKSTEP_ASSIGN_OR_RETURN(const RegisterFile* regs_now, cursor->Registers(thread));
    const RegisterFile before_regs = *regs_now;
    Source next;
    if (kind != EventKind::kInstruction) {
      next.end = "written by " + std::string(EventKindName(kind));
    } else if (!step.pc) {
      next.end = "pc unknown";
    } else {
      std::uint8_t bytes[15], known[15];
      BACKSTEP_RETURN_IF_ERROR(cursor->ReadMemory(*step.pc, bytes, known));
      std::size_t n = 0;
      while (n < sizeof bytes && known[n]) ++n;
      const cs_insn* insn = dis.Decode(std::span<const std::uint8_t>(bytes, n), *step.pc);
      if (!insn) {
        next.end = "undecodable instruction";
      } else {
        step.instruction =
            std::string(insn->mnemonic) + (insn->op_str[0] ? " " : "") + std::string(insn->op_str);
        next = FindSource(dis, *insn, before_regs, current, piece);
      }
    }
    // The value the writer left.
    BACKSTEP_RETURN_IF_ERROR(cursor->Seek(Position(w + 1)));
    BACKSTEP_RETURN_IF_ERROR(read_location(current, thread, step));
    step.end = next.end;
    if (step.end.empty() && d + 1 == depth) step.end = "depth";
    steps.push_back(std::move(step));
    if (!next.end.empty()) break;
    current = std::move(next);
    reg_thread = thread;
    before = Position(w);
  }
  return steps;
}

std::string FormatOrigin(const std::vector<OriginStep>& steps) {
  static const char kDigits[] = "0123456789abcdef";
  std::string out;
  for (std::size_t i = 0; i < steps.size(); ++i) {
    const OriginStep& s = steps[i];
    out += "#" + std::to_string(i) + " ";
    out += s.position ? "pos " + std::to_string(s.position->value) : std::string("pos -");
    out += s.pc ? " pc " + Hex(*s.pc) : std::string(" pc -");
    out += " " + s.location.ToString() + " =";
    for (std::size_t j = 0; j < s.value.size() && j < 64; ++j) {
      out += ' ';
      if (s.known[j]) {
        out += kDigits[s.value[j] >> 4];
        out += kDigits[s.value[j] & 15];
      } else {
        out += "??";
      }
    }
    if (s.value.size() > 64) out += " ...";
    if (!s.instruction.empty()) out += "  <- " + s.instruction;
    out += "\n";
    if (!s.end.empty()) out += "   (" + s.end + ")\n";
  }
  return out;
}

}  // namespace backstep::core
