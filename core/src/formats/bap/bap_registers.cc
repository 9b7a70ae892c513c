#include "formats/bap/bap_registers.h"

#include <array>

#include "formats/bap/bap_format.h"

namespace backstep::core {
namespace {

// frame_arch.h's enum (docs/formats/bap.md §4.3), for "not supported yet" messages.
constexpr std::array<std::string_view, 82> kArchNames = {
    "unknown", "obscure", "m68k",  "vax",     "i960",       "or32",    "sparc",     "spu",
    "mips",    "i386",    "l1om",  "we32k",   "tahoe",      "i860",    "i370",      "romp",
    "convex",  "m88k",    "m98k",  "pyramid", "h8300",      "pdp11",   "plugin",    "powerpc",
    "rs6000",  "hppa",    "d10v",  "d30v",    "dlx",        "m68hc11", "m68hc12",   "z8k",
    "h8500",   "sh",      "alpha", "arm",     "ns32k",      "w65",     "tic30",     "tic4x",
    "tic54x",  "tic6x",   "tic80", "v850",    "arc",        "m32c",    "m32r",      "mn10200",
    "mn10300", "fr30",    "frv",   "moxie",   "mcore",      "mep",     "ia64",      "ip2k",
    "iq2000",  "mt",      "pj",    "avr",     "bfin",       "cr16",    "cr16c",     "crx",
    "cris",    "rx",      "s390",  "score",   "openrisc",   "mmix",    "xstormy16", "msp430",
    "xc16x",   "xtensa",  "z80",   "lm32",    "microblaze", "6502",    "aarch64",   "8051",
    "sm83",    "hexagon"};

// The legacy QEMU tracer's x86-64 names (tracewrap: upper case).
constexpr std::pair<std::string_view, std::string_view> kLegacyX86_64[] = {
    {"RAX", "rax"},
    {"RBX", "rbx"},
    {"RCX", "rcx"},
    {"RDX", "rdx"},
    {"RSI", "rsi"},
    {"RDI", "rdi"},
    {"RBP", "rbp"},
    {"RSP", "rsp"},
    {"R8", "r8"},
    {"R9", "r9"},
    {"R10", "r10"},
    {"R11", "r11"},
    {"R12", "r12"},
    {"R13", "r13"},
    {"R14", "r14"},
    {"R15", "r15"},
    {"RIP", "rip"},
    {"RFLAGS", "eflags"},
    {"EFLAGS", "eflags"},
    {"CS", "cs"},
    {"SS", "ss"},
    {"DS", "ds"},
    {"ES", "es"},
    {"FS", "fs"},
    {"GS", "gs"},
    {"FS_BASE", "fs_base"},
    {"GS_BASE", "gs_base"},
    // QEMU's gdbstub name for KERNEL_GS_BASE (TCG plugin, system mode).
    {"k_gs_base", "msr_c0000102"},
};

// The legacy QEMU tracer's i386 names.
constexpr std::pair<std::string_view, std::string_view> kLegacyI386[] = {
    {"EAX", "eax"},         {"EBX", "ebx"},         {"ECX", "ecx"}, {"EDX", "edx"},
    {"ESI", "esi"},         {"EDI", "edi"},         {"EBP", "ebp"}, {"ESP", "esp"},
    {"EIP", "eip"},         {"EFLAGS", "eflags"},   {"CS", "cs"},   {"SS", "ss"},
    {"DS", "ds"},           {"ES", "es"},           {"FS", "fs"},   {"GS", "gs"},
    {"FS_BASE", "fs_base"}, {"GS_BASE", "gs_base"},
};

}  // namespace

std::string_view BapArchName(std::uint64_t arch) {
  if (arch < kArchNames.size()) return kArchNames[arch];
  return "an architecture past frame_arch.h's enum";
}

BapArch::BapArch(const ArchDescription& arch, std::uint64_t bap_arch, std::uint64_t bap_machine,
                 std::string_view name)
    : arch_(&arch), bap_arch_(bap_arch), bap_machine_(bap_machine), name_(name) {
  // The TCG plugin's names: gdb's, i.e. the table's canonical names.
  for (RegisterId id = 0; id < arch.register_count(); ++id) {
    if (!arch.info(id).derived) names_.emplace(std::string(arch.info(id).name), id);
  }
  const auto add = [&](const auto& table) {
    for (const auto& [tracer, canonical] : table) Add(tracer, canonical);
  };
  if (&arch == &X86_64()) {
    add(kLegacyX86_64);
  } else {
    add(kLegacyI386);
  }
}

void BapArch::Add(std::string_view tracer_name, std::string_view table_name) {
  if (auto id = arch_->Find(table_name)) names_.emplace(std::string(tracer_name), *id);
}

RegisterId BapArch::Find(std::string_view tracer_name) const {
  auto it = names_.find(std::string(tracer_name));
  return it == names_.end() ? kNoRegister : it->second;
}

std::string_view BapArch::WriteName(RegisterId id) const {
  return arch_->info(id).derived ? std::string_view() : arch_->info(id).name;
}

const BapArch& BapX86_64() {
  static const BapArch kArch(X86_64(), kBapArchI386, kBapMachX86_64, "x86-64");
  return kArch;
}

const BapArch& BapI386() {
  static const BapArch kArch(I386(), kBapArchI386, kBapMachI386, "i386");
  return kArch;
}

Expected<const BapArch*> FindBapArch(std::uint64_t bap_arch, std::uint64_t bap_machine) {
  if (bap_arch == kBapArchI386) {
    if (bap_machine == kBapMachX86_64 || bap_machine == kBapMachX86_64Intel) return &BapX86_64();
    // Machine 0 (unspecified) is BAP's default for i386: 32-bit.
    if (bap_machine == kBapMachI386 || bap_machine == kBapMachI386Intel || bap_machine == 0) {
      return &BapI386();
    }
    return Status::Unsupported("not supported yet: i386 machine " + std::to_string(bap_machine) +
                               (bap_machine == kBapMachI8086 ? " (i8086)" : ""));
  }
  return Status::Unsupported("not supported yet: " + std::string(BapArchName(bap_arch)) +
                             " (frame_architecture " + std::to_string(bap_arch) + ")");
}

const BapArch* BapArchFor(const ArchDescription& arch) {
  if (&arch == &X86_64()) return &BapX86_64();
  if (&arch == &I386()) return &BapI386();
  return nullptr;
}

}  // namespace backstep::core
