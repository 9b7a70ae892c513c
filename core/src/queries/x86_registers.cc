// Capstone x86_reg -> X86_64() bytes (see the header). The table's gdb
// registers have fixed ids (RegisterId == gdb regnum, x86_64_registers.cc);
// x86_registers_test.cc checks every constant below against the table.
#include "queries/x86_registers.h"

#include <capstone/capstone.h>

#include <algorithm>

namespace backstep::core::x86 {
namespace {

// gdb amd64 register numbers = X86_64() ids.
constexpr RegisterId kRax = 0, kRbx = 1, kRcx = 2, kRdx = 3, kRsi = 4, kRdi = 5, kRbp = 6, kRsp = 7,
                     kR8 = 8, kRip = 16, kEflags = 17, kCs = 18, kSs = 19, kDs = 20, kEs = 21,
                     kFs = 22, kGs = 23, kXmm0 = 40, kFsBase = 58, kGsBase = 59, kYmm0h = 60,
                     kXmm16 = 76, kYmm16h = 92, kK0 = 108, kZmm0h = 116;

static_assert(X86_REG_R15 - X86_REG_R8 == 7 && X86_REG_R15D - X86_REG_R8D == 7 &&
              X86_REG_R15W - X86_REG_R8W == 7 && X86_REG_R15B - X86_REG_R8B == 7);
static_assert(X86_REG_XMM31 - X86_REG_XMM0 == 31 && X86_REG_YMM31 - X86_REG_YMM0 == 31 &&
              X86_REG_ZMM31 - X86_REG_ZMM0 == 31 && X86_REG_K7 - X86_REG_K0 == 7);

RegisterBytes One(RegisterId id, std::uint8_t lo, std::uint8_t hi) {
  return RegisterBytes{{RegisterSlice{id, lo, hi}}};
}

// Vector register n's pieces up to `bytes` (16, 32 or 64).
RegisterBytes Vector(unsigned n, unsigned bytes) {
  RegisterBytes out;
  out.slices.push_back({static_cast<RegisterId>(n < 16 ? kXmm0 + n : kXmm16 + n - 16), 0, 16});
  if (bytes >= 32) {
    out.slices.push_back({static_cast<RegisterId>(n < 16 ? kYmm0h + n : kYmm16h + n - 16), 0, 16});
  }
  if (bytes >= 64) out.slices.push_back({static_cast<RegisterId>(kZmm0h + n), 0, 32});
  return out;
}

// The legacy registers: (capstone id, table id, lo, hi).
struct Legacy {
  unsigned reg;
  RegisterId id;
  std::uint8_t lo, hi;
};
constexpr Legacy kLegacy[] = {
    {X86_REG_RAX, kRax, 0, 8},       {X86_REG_EAX, kRax, 0, 4}, {X86_REG_AX, kRax, 0, 2},
    {X86_REG_AL, kRax, 0, 1},        {X86_REG_AH, kRax, 1, 2},  {X86_REG_RBX, kRbx, 0, 8},
    {X86_REG_EBX, kRbx, 0, 4},       {X86_REG_BX, kRbx, 0, 2},  {X86_REG_BL, kRbx, 0, 1},
    {X86_REG_BH, kRbx, 1, 2},        {X86_REG_RCX, kRcx, 0, 8}, {X86_REG_ECX, kRcx, 0, 4},
    {X86_REG_CX, kRcx, 0, 2},        {X86_REG_CL, kRcx, 0, 1},  {X86_REG_CH, kRcx, 1, 2},
    {X86_REG_RDX, kRdx, 0, 8},       {X86_REG_EDX, kRdx, 0, 4}, {X86_REG_DX, kRdx, 0, 2},
    {X86_REG_DL, kRdx, 0, 1},        {X86_REG_DH, kRdx, 1, 2},  {X86_REG_RSI, kRsi, 0, 8},
    {X86_REG_ESI, kRsi, 0, 4},       {X86_REG_SI, kRsi, 0, 2},  {X86_REG_SIL, kRsi, 0, 1},
    {X86_REG_RDI, kRdi, 0, 8},       {X86_REG_EDI, kRdi, 0, 4}, {X86_REG_DI, kRdi, 0, 2},
    {X86_REG_DIL, kRdi, 0, 1},       {X86_REG_RBP, kRbp, 0, 8}, {X86_REG_EBP, kRbp, 0, 4},
    {X86_REG_BP, kRbp, 0, 2},        {X86_REG_BPL, kRbp, 0, 1}, {X86_REG_RSP, kRsp, 0, 8},
    {X86_REG_ESP, kRsp, 0, 4},       {X86_REG_SP, kRsp, 0, 2},  {X86_REG_SPL, kRsp, 0, 1},
    {X86_REG_RIP, kRip, 0, 8},       {X86_REG_EIP, kRip, 0, 4}, {X86_REG_IP, kRip, 0, 2},
    {X86_REG_EFLAGS, kEflags, 0, 4}, {X86_REG_CS, kCs, 0, 4},   {X86_REG_SS, kSs, 0, 4},
    {X86_REG_DS, kDs, 0, 4},         {X86_REG_ES, kEs, 0, 4},   {X86_REG_FS, kFs, 0, 4},
    {X86_REG_GS, kGs, 0, 4},
};

bool IsGpr32(unsigned reg) {
  switch (reg) {
    case X86_REG_EAX:
    case X86_REG_EBX:
    case X86_REG_ECX:
    case X86_REG_EDX:
    case X86_REG_ESI:
    case X86_REG_EDI:
    case X86_REG_EBP:
    case X86_REG_ESP:
      return true;
    default:
      return reg >= X86_REG_R8D && reg <= X86_REG_R15D;
  }
}

}  // namespace

std::uint32_t RegisterBytes::size() const {
  std::uint32_t n = 0;
  for (const RegisterSlice& s : slices) n += s.hi - s.lo;
  return n;
}

bool RegisterBytes::Overlaps(const RegisterBytes& other) const {
  for (const RegisterSlice& a : slices) {
    for (const RegisterSlice& b : other.slices) {
      if (a.id == b.id && a.lo < b.hi && b.lo < a.hi) return true;
    }
  }
  return false;
}

bool RegisterBytes::Overlaps(RegisterId id) const {
  return std::any_of(slices.begin(), slices.end(),
                     [id](const RegisterSlice& s) { return s.id == id; });
}

std::optional<std::uint32_t> RegisterBytes::OffsetOf(const RegisterSlice& other) const {
  std::uint32_t offset = 0;
  for (const RegisterSlice& s : slices) {
    if (s.id == other.id && s.lo <= other.lo && other.lo < s.hi) return offset + other.lo - s.lo;
    offset += s.hi - s.lo;
  }
  return std::nullopt;
}

RegisterBytes RegisterBytes::Sub(std::uint32_t offset, std::uint32_t size) const {
  RegisterBytes out;
  std::uint32_t at = 0;
  const std::uint32_t end = offset + size;
  for (const RegisterSlice& s : slices) {
    const std::uint32_t lo = at, hi = at + (s.hi - s.lo);
    at = hi;
    const std::uint32_t a = std::max(lo, offset), b = std::min(hi, end);
    if (a >= b) continue;
    out.slices.push_back({s.id, static_cast<std::uint8_t>(s.lo + (a - lo)),
                          static_cast<std::uint8_t>(s.lo + (b - lo))});
  }
  return out;
}

std::optional<RegisterBytes> BytesOf(unsigned reg) {
  for (const Legacy& l : kLegacy) {
    if (l.reg == reg) return One(l.id, l.lo, l.hi);
  }
  if (reg >= X86_REG_R8 && reg <= X86_REG_R15) return One(kR8 + (reg - X86_REG_R8), 0, 8);
  if (reg >= X86_REG_R8D && reg <= X86_REG_R15D) return One(kR8 + (reg - X86_REG_R8D), 0, 4);
  if (reg >= X86_REG_R8W && reg <= X86_REG_R15W) return One(kR8 + (reg - X86_REG_R8W), 0, 2);
  if (reg >= X86_REG_R8B && reg <= X86_REG_R15B) return One(kR8 + (reg - X86_REG_R8B), 0, 1);
  if (reg >= X86_REG_XMM0 && reg <= X86_REG_XMM31) return Vector(reg - X86_REG_XMM0, 16);
  if (reg >= X86_REG_YMM0 && reg <= X86_REG_YMM31) return Vector(reg - X86_REG_YMM0, 32);
  if (reg >= X86_REG_ZMM0 && reg <= X86_REG_ZMM31) return Vector(reg - X86_REG_ZMM0, 64);
  if (reg >= X86_REG_K0 && reg <= X86_REG_K7) return One(kK0 + (reg - X86_REG_K0), 0, 8);
  return std::nullopt;
}

std::optional<RegisterBytes> WrittenBytesOf(unsigned reg, bool vex) {
  std::optional<RegisterBytes> bytes = BytesOf(reg);
  if (!bytes) return bytes;
  if (IsGpr32(reg)) bytes->slices.front().hi = 8;
  if (vex && reg >= X86_REG_XMM0 && reg <= X86_REG_XMM31) return Vector(reg - X86_REG_XMM0, 64);
  if (vex && reg >= X86_REG_YMM0 && reg <= X86_REG_YMM31) return Vector(reg - X86_REG_YMM0, 64);
  return bytes;
}

std::optional<RegisterId> SegmentBaseOf(unsigned segment_reg) {
  if (segment_reg == X86_REG_FS) return kFsBase;
  if (segment_reg == X86_REG_GS) return kGsBase;
  return std::nullopt;
}

void Read(const RegisterFile& regs, const RegisterBytes& bytes, std::vector<std::uint8_t>& value,
          std::vector<std::uint8_t>& known) {
  value.clear();
  known.clear();
  for (const RegisterSlice& s : bytes.slices) {
    std::vector<std::uint8_t> piece(regs.arch().info(s.id).size);
    const bool k = regs.Read(s.id, piece);
    value.insert(value.end(), piece.begin() + s.lo, piece.begin() + s.hi);
    known.insert(known.end(), s.hi - s.lo, k ? 1 : 0);
  }
}

std::optional<std::uint64_t> ReadInteger(const RegisterFile& regs, const RegisterBytes& bytes) {
  std::vector<std::uint8_t> value, known;
  Read(regs, bytes, value, known);
  if (value.size() > 8) return std::nullopt;
  std::uint64_t v = 0;
  for (std::size_t i = value.size(); i-- > 0;) {
    if (!known[i]) return std::nullopt;
    v = (v << 8) | value[i];
  }
  return v;
}

}  // namespace backstep::core::x86
