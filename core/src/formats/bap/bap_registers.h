// BapArch: what backstep knows of one BAP architecture (frame_architecture
// + frame_machine): the register table and the mapping from the register
// names BAP's tracers write in operands to the table's RegisterIds.
//
// The mapping is this module's table (bap_registers.cc), resolved once:
//   * the legacy QEMU tracer's upper-case names (x86-64: RAX..R15, RFLAGS,
//     FS_BASE, GS_BASE, ...; i386: EAX..EDI, EFLAGS, ...);
//   * the 2025 TCG plugin's names, which are QEMU's gdbstub names and
//     therefore gdb's: every stored register of the table under its
//     canonical name (rax, rip, eflags, xmm0, fs_base, ...), plus QEMU's
//     k_gs_base. The x87 stack registers st0..st7 are not mapped (their
//     storage slot depends on fstat.TOP); neither are segment bases other
//     than fs/gs.
// Names outside the table are ignored by the reader (their values are not
// known to backstep) and counted.
//
// Thread-safety: immutable after construction; shared freely.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>

#include "backstep/core/arch.h"
#include "backstep/core/expected.h"

namespace backstep::core {

class BapArch {
 public:
  BapArch(const ArchDescription& arch, std::uint64_t bap_arch, std::uint64_t bap_machine,
          std::string_view name);

  const ArchDescription& arch() const { return *arch_; }
  std::uint64_t bap_arch() const { return bap_arch_; }
  std::uint64_t bap_machine() const { return bap_machine_; }
  std::string_view name() const { return name_; }  // "x86-64", "i386"
  // The register a tracer's operand name denotes, or kNoRegister.
  RegisterId Find(std::string_view tracer_name) const;
  // The name our writer uses for a register (the TCG plugin's, i.e. the
  // table's canonical name); empty for registers BAP cannot carry.
  std::string_view WriteName(RegisterId id) const;

 private:
  void Add(std::string_view tracer_name, std::string_view table_name);

  const ArchDescription* arch_;
  std::uint64_t bap_arch_, bap_machine_;
  std::string_view name_;
  std::unordered_map<std::string, RegisterId> names_;
};

// The architecture of a file's header. Unsupported: "not supported yet:
// ARCH" (with the machine when the architecture is i386 but the machine is
// not one backstep has a table for).
Expected<const BapArch*> FindBapArch(std::uint64_t bap_arch, std::uint64_t bap_machine);
// The BapArch our writer uses for a table; nullptr when BAP output of that
// architecture is not supported.
const BapArch* BapArchFor(const ArchDescription& arch);

}  // namespace backstep::core
