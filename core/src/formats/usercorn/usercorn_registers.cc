#include "backstep/core/usercorn_registers.h"

#include <algorithm>
#include <cassert>
#include <string>

namespace backstep::core {
namespace {

// Unicorn x86 enum (unicorn/bindings/go/unicorn/x86_const.go), docs/formats/usercorn.md
// §2.4. Tracked entries first, in the order usercorn's keyframe sends them:
// names without digits alphabetically, then r8..r15.
constexpr UnicornRegister kX86_64[] = {
    {35, "rax", true},
    {36, "rbp", true},
    {37, "rbx", true},
    {38, "rcx", true},
    {39, "rdi", true},
    {40, "rdx", true},
    {43, "rsi", true},
    {44, "rsp", true},
    {106, "r8", true},
    {107, "r9", true},
    {108, "r10", true},
    {109, "r11", true},
    {110, "r12", true},
    {111, "r13", true},
    {112, "r14", true},
    {113, "r15", true},
    {25, "eflags", false},
    {253, "eflags", false},  // UC_X86_REG_EFLAGS, _RFLAGS
    {11, "cs", false},
    {49, "ss", false},
    {17, "ds", false},
    {28, "es", false},
    {32, "fs", false},
    {33, "gs", false},
    {250, "fs_base", false},
    {251, "gs_base", false},
    {122, "xmm0", false},
    {123, "xmm1", false},
    {124, "xmm2", false},
    {125, "xmm3", false},
    {126, "xmm4", false},
    {127, "xmm5", false},
    {128, "xmm6", false},
    {129, "xmm7", false},
    {130, "xmm8", false},
    {131, "xmm9", false},
    {132, "xmm10", false},
    {133, "xmm11", false},
    {134, "xmm12", false},
    {135, "xmm13", false},
    {136, "xmm14", false},
    {137, "xmm15", false},
    // x87 and SSE control (backstep record): FPCW, FPSW (with TOP), the
    // full FPTAG word, MXCSR, and FP0-7 = physical R0-R7 (SPREG, 10 bytes).
    {246, "fctrl", false},
    {31, "fstat", false},
    {247, "ftag", false},
    {249, "mxcsr", false},
    // The last x87 instruction (backstep record): FOP, and FIP/FDP as u64
    // REGs whose halves are gdb's fioff/fiseg and fooff/foseg.
    {258, "fop", false},
    {254, "fioff", false, "fiseg"},
    {256, "fooff", false, "foseg"},
    {82, "fpr0", false},
    {83, "fpr1", false},
    {84, "fpr2", false},
    {85, "fpr3", false},
    {86, "fpr4", false},
    {87, "fpr5", false},
    {88, "fpr6", false},
    {89, "fpr7", false},
    // YMM0-15 (SPREG, 32 bytes): the low half is xmmN, the high half ymmNh.
    {154, "xmm0", false, "ymm0h"},
    {155, "xmm1", false, "ymm1h"},
    {156, "xmm2", false, "ymm2h"},
    {157, "xmm3", false, "ymm3h"},
    {158, "xmm4", false, "ymm4h"},
    {159, "xmm5", false, "ymm5h"},
    {160, "xmm6", false, "ymm6h"},
    {161, "xmm7", false, "ymm7h"},
    {162, "xmm8", false, "ymm8h"},
    {163, "xmm9", false, "ymm9h"},
    {164, "xmm10", false, "ymm10h"},
    {165, "xmm11", false, "ymm11h"},
    {166, "xmm12", false, "ymm12h"},
    {167, "xmm13", false, "ymm13h"},
    {168, "xmm14", false, "ymm14h"},
    {169, "xmm15", false, "ymm15h"},
    // AVX-512 (backstep record): XMM16-31 (SPREG, 16 bytes), k0-7 (REG), YMM16-31 (SPREG, 32 bytes:
    // xmmN + ymmNh); ZMM0-31 (SPREG, 64 bytes: xmmN + ymmNh + zmmNh).
    {138, "xmm16", false},
    {139, "xmm17", false},
    {140, "xmm18", false},
    {141, "xmm19", false},
    {142, "xmm20", false},
    {143, "xmm21", false},
    {144, "xmm22", false},
    {145, "xmm23", false},
    {146, "xmm24", false},
    {147, "xmm25", false},
    {148, "xmm26", false},
    {149, "xmm27", false},
    {150, "xmm28", false},
    {151, "xmm29", false},
    {152, "xmm30", false},
    {153, "xmm31", false},
    {90, "k0", false},
    {91, "k1", false},
    {92, "k2", false},
    {93, "k3", false},
    {94, "k4", false},
    {95, "k5", false},
    {96, "k6", false},
    {97, "k7", false},
    {170, "xmm16", false, "ymm16h"},
    {171, "xmm17", false, "ymm17h"},
    {172, "xmm18", false, "ymm18h"},
    {173, "xmm19", false, "ymm19h"},
    {174, "xmm20", false, "ymm20h"},
    {175, "xmm21", false, "ymm21h"},
    {176, "xmm22", false, "ymm22h"},
    {177, "xmm23", false, "ymm23h"},
    {178, "xmm24", false, "ymm24h"},
    {179, "xmm25", false, "ymm25h"},
    {180, "xmm26", false, "ymm26h"},
    {181, "xmm27", false, "ymm27h"},
    {182, "xmm28", false, "ymm28h"},
    {183, "xmm29", false, "ymm29h"},
    {184, "xmm30", false, "ymm30h"},
    {185, "xmm31", false, "ymm31h"},
    {186, "xmm0", false, "ymm0h", "zmm0h"},
    {187, "xmm1", false, "ymm1h", "zmm1h"},
    {188, "xmm2", false, "ymm2h", "zmm2h"},
    {189, "xmm3", false, "ymm3h", "zmm3h"},
    {190, "xmm4", false, "ymm4h", "zmm4h"},
    {191, "xmm5", false, "ymm5h", "zmm5h"},
    {192, "xmm6", false, "ymm6h", "zmm6h"},
    {193, "xmm7", false, "ymm7h", "zmm7h"},
    {194, "xmm8", false, "ymm8h", "zmm8h"},
    {195, "xmm9", false, "ymm9h", "zmm9h"},
    {196, "xmm10", false, "ymm10h", "zmm10h"},
    {197, "xmm11", false, "ymm11h", "zmm11h"},
    {198, "xmm12", false, "ymm12h", "zmm12h"},
    {199, "xmm13", false, "ymm13h", "zmm13h"},
    {200, "xmm14", false, "ymm14h", "zmm14h"},
    {201, "xmm15", false, "ymm15h", "zmm15h"},
    {202, "xmm16", false, "ymm16h", "zmm16h"},
    {203, "xmm17", false, "ymm17h", "zmm17h"},
    {204, "xmm18", false, "ymm18h", "zmm18h"},
    {205, "xmm19", false, "ymm19h", "zmm19h"},
    {206, "xmm20", false, "ymm20h", "zmm20h"},
    {207, "xmm21", false, "ymm21h", "zmm21h"},
    {208, "xmm22", false, "ymm22h", "zmm22h"},
    {209, "xmm23", false, "ymm23h", "zmm23h"},
    {210, "xmm24", false, "ymm24h", "zmm24h"},
    {211, "xmm25", false, "ymm25h", "zmm25h"},
    {212, "xmm26", false, "ymm26h", "zmm26h"},
    {213, "xmm27", false, "ymm27h", "zmm27h"},
    {214, "xmm28", false, "ymm28h", "zmm28h"},
    {215, "xmm29", false, "ymm29h", "zmm29h"},
    {216, "xmm30", false, "ymm30h", "zmm30h"},
    {217, "xmm31", false, "ymm31h", "zmm31h"},
};
constexpr std::uint16_t kX86_64Pc = 41;  // UC_X86_REG_RIP

// Unicorn x86 enum for a 32-bit ("x86") trace, docs/formats/usercorn.md §2.4: the eight
// GPRs are tracked (keyframe order: names alphabetically), the rest are
// optional, with the same enums as x86_64's for the x87/SSE state.
constexpr UnicornRegister kX86[] = {
    {19, "eax", true},       {20, "ebp", true},     {21, "ebx", true},    {22, "ecx", true},
    {23, "edi", true},       {24, "edx", true},     {29, "esi", true},    {30, "esp", true},
    {25, "eflags", false},   {11, "cs", false},     {49, "ss", false},    {17, "ds", false},
    {28, "es", false},       {32, "fs", false},     {33, "gs", false},    {250, "fs_base", false},
    {251, "gs_base", false}, {122, "xmm0", false},  {123, "xmm1", false}, {124, "xmm2", false},
    {125, "xmm3", false},    {126, "xmm4", false},  {127, "xmm5", false}, {128, "xmm6", false},
    {129, "xmm7", false},    {246, "fctrl", false}, {31, "fstat", false}, {247, "ftag", false},
    {249, "mxcsr", false},   {82, "fpr0", false},   {83, "fpr1", false},  {84, "fpr2", false},
    {85, "fpr3", false},     {86, "fpr4", false},   {87, "fpr5", false},  {88, "fpr6", false},
    {89, "fpr7", false},
};
constexpr std::uint16_t kX86Pc = 26;  // UC_X86_REG_EIP

// Architecture strings usercorn writes that have no table yet.
constexpr std::string_view kKnownUnsupported[] = {"arm", "arm64", "mips", "sparc", "m68k"};

}  // namespace

UsercornArch::UsercornArch(std::string_view name, const ArchDescription& arch,
                           std::uint16_t pc_enum, std::span<const UnicornRegister> table)
    : name_(name), arch_(&arch), pc_enum_(pc_enum) {
  by_register_.assign(arch.register_count(), kNoUnicornRegister);
  wide_of_high_.assign(arch.register_count(), kNoUnicornRegister);
  for (const UnicornRegister& r : table) {
    const std::optional<RegisterId> id = arch.Find(r.name);
    assert(id.has_value() && "usercorn register table names an unknown register");
    if (!id) continue;
    if (r.unicorn >= by_enum_.size()) {
      by_enum_.resize(r.unicorn + 1u, kNoRegister);
      high_.resize(r.unicorn + 1u, kNoRegister);
      top_.resize(r.unicorn + 1u, kNoRegister);
    }
    by_enum_[r.unicorn] = *id;
    if (!r.high.empty()) {
      const std::optional<RegisterId> high = arch.Find(r.high);
      assert(high.has_value() && "usercorn register table names an unknown register");
      if (high) high_[r.unicorn] = *high;
      if (high && wide_of_high_[*high] == kNoUnicornRegister) wide_of_high_[*high] = r.unicorn;
    }
    if (!r.top.empty()) {
      const std::optional<RegisterId> top = arch.Find(r.top);
      assert(top.has_value() && "usercorn register table names an unknown register");
      if (top) top_[r.unicorn] = *top;
    }
    if (by_register_[*id] == kNoUnicornRegister) by_register_[*id] = r.unicorn;
    if (r.tracked) tracked_.push_back(*id);
  }
}

std::size_t UsercornArch::WideSize(std::uint16_t unicorn) const {
  std::size_t size = 0;
  for (RegisterId id : {Find(unicorn), FindHigh(unicorn), FindTop(unicorn)}) {
    if (id != kNoRegister) size += arch_->info(id).size;
  }
  return size;
}

std::uint16_t UsercornArch::SplitU64Of(RegisterId id) const {
  const std::uint16_t own = UnicornOf(id);
  const std::uint16_t e = own != kNoUnicornRegister ? own : WideOf(id);
  const RegisterId low = Find(e), high = FindHigh(e);
  if (low == kNoRegister || high == kNoRegister) return kNoUnicornRegister;
  return arch_->info(low).size + arch_->info(high).size <= 8 ? e : kNoUnicornRegister;
}

bool UsercornArch::IsTracked(RegisterId id) const {
  return std::find(tracked_.begin(), tracked_.end(), id) != tracked_.end();
}

const UsercornArch& UsercornX86_64() {
  static const UsercornArch arch("x86_64", X86_64(), kX86_64Pc, kX86_64);
  return arch;
}

const UsercornArch& UsercornX86() {
  static const UsercornArch arch("x86", I386(), kX86Pc, kX86);
  return arch;
}

Expected<const UsercornArch*> FindUsercornArch(std::string_view name) {
  if (name == "x86_64") return &UsercornX86_64();
  if (name == "x86") return &UsercornX86();
  const bool known = std::find(std::begin(kKnownUnsupported), std::end(kKnownUnsupported), name) !=
                     std::end(kKnownUnsupported);
  return Status::Unsupported("architecture '" + std::string(name) + "' is not supported" +
                             (known ? " yet" : "") +
                             " (backstep reads x86_64 and x86 usercorn traces)");
}

}  // namespace backstep::core
