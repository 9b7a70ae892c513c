// TfileRegisterLayout: where each register sits in a tfile R block, and the
// conversion between R blocks and canonical X86_64() registers.
//
// gdb's rule (tracefile-tfile.c tfile_fetch_registers, remote.c
// map_regcache_remote_table): the R block is the `g` packet image of the
// target description: registers sorted by regnum, concatenated without
// padding; a register whose end lies past the R size is unavailable. Each
// tdesc register is mapped to X86_64() by name, once, at open
// (ArchDescription::Find); registers backstep does not know, or whose size
// differs from the table's, keep their place in the layout but are ignored
// and named in notes().
//
// x87: the block holds st0..st7 in *stack* order and fstat with TOP; the
// canonical storage is physical fpr0..7, so st(i) goes to fpr[(TOP+i) & 7]
// (arch.h). ftag is the full tag word on both sides. When fstat is not in the
// block, the st registers stay unknown.
//
// Without a tdesc, gdb uses the executable's architecture; backstep assumes
// gdb's amd64 (Linux) layout whose size equals the R size: core+sse (536),
// +linux (544), +segments (560), +avx (816), +avx512 (2416), +pkeys (2420).
// Another size takes the smallest of these that covers it (the rest of the
// registers are unavailable), or the largest one (extra bytes ignored).
//
// Writing: tfile R blocks have no "unknown" marker (gdb's regcache would say
// <unavailable> only for registers past the R size), so Encode() writes
// unknown registers as zeros; a reader sees them as known zeros.
//
// Thread-safety: immutable after construction.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "backstep/core/arch.h"
#include "backstep/core/expected.h"
#include "backstep/core/register_file.h"
#include "formats/tfile/tfile_tdesc.h"

namespace backstep::core {

struct TfileRegisterSlot {
  std::string name;  // as the tdesc (or table) names it
  int regnum = 0;
  std::uint32_t offset = 0;  // in the R block
  std::uint32_t size = 0;
  RegisterId reg = kNoRegister;  // canonical register; kNoRegister: ignored
  int st_index = -1;             // 0..7 for st0..st7 (stored through TOP)
};

class TfileRegisterLayout {
 public:
  // From a parsed tdesc and the R size. Unsupported (a short reason) for an
  // architecture other than x86-64, or no architecture and no "rip".
  static Expected<TfileRegisterLayout> FromTdesc(const Tdesc& tdesc, std::uint64_t block_size);
  // gdb's amd64 layout chosen by R size (no tdesc), as described above.
  static TfileRegisterLayout ForBlockSize(std::uint64_t block_size);
  // X86_64().GdbLayout(features): the layout backstep writes. Block size =
  // GdbBlockSize(features).
  static TfileRegisterLayout ForFeatures(std::uint32_t features);

  std::uint64_t block_size() const { return block_size_; }
  const std::vector<TfileRegisterSlot>& slots() const { return slots_; }
  // "tdesc i386:x86-64: 148 registers, 2416 bytes" / "no tdesc: assumed ...".
  const std::string& description() const { return description_; }
  // Names of registers the layout ignores (unknown to X86_64()).
  const std::vector<std::string>& unmapped() const { return unmapped_; }
  // Other remarks: size mismatches, registers past the R size, spare bytes.
  const std::vector<std::string>& notes() const { return notes_; }

  // Appends a kSet write for every mapped register inside `block` (the R
  // block's bytes; a shorter span leaves later registers unknown).
  void Decode(std::span<const std::uint8_t> block, std::vector<RegisterWrite>* out) const;
  // The R block (block_size() bytes) for `regs` (an X86_64() file): unknown
  // registers are zeros; st(i) = fpr[(TOP + i) & 7], TOP from fstat (0 when
  // fstat is unknown, which is also what the zero fstat in the block says).
  std::vector<std::uint8_t> Encode(const RegisterFile& regs) const;

 private:
  TfileRegisterLayout() = default;
  // Resolves each slot's canonical register and fills unmapped_/notes_.
  void Map();

  std::uint64_t block_size_ = 0;
  std::vector<TfileRegisterSlot> slots_;  // sorted by regnum
  std::string description_;
  std::vector<std::string> unmapped_;
  std::vector<std::string> notes_;
  int fstat_slot_ = -1;  // index in slots_, or -1
};

}  // namespace backstep::core
