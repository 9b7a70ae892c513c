// X64dbgDumpLayout: x64dbg's REGDUMP (one "slot" = one pointer-sized word)
// mapped onto an architecture table.
//
// docs/formats/x64dbg.md §5.3 has the slot map. Every byte of the dump is one of:
//   * a piece of a table register (rax at slot 0, gs at slot 18 +0, xmm3 at
//     slots 46-47, ymm3h at slots 86-87, lasterror at slot 171 +4, ...);
//   * the x87 RegisterArea (80 bytes in ST order), which gives fpr0..fpr7
//     (physical R_j = RegisterArea[((j - TOP) & 7) * 10], TOP from fstat);
//   * the derived region (eflags/MXCSR/status/control-word booleans, the
//     x87FPURegisters copies, mmx0..7): x64dbg recomputes it from the
//     registers above, so readers ignore it and writers recompute it;
//   * padding (the upper half of rflags' slot, Cr0NpxState, alignment),
//     written as 0 and ignored.
// A register is known when every slot holding it is known.
//
// Thread-safety: layouts are immutable after construction.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "backstep/core/arch.h"
#include "backstep/core/expected.h"
#include "backstep/core/register_file.h"

namespace backstep::core {

class X64dbgDumpLayout {
 public:
  // The .trace64 dump (8-byte slots, 172 of them) on X86_64().
  static const X64dbgDumpLayout& X64();
  // The .trace32 dump (4-byte slots, 216 of them) on I386(). Expected for
  // the registry's sake (always succeeds).
  static Expected<const X64dbgDumpLayout*> X86();

  const ArchDescription& arch() const { return *arch_; }
  unsigned duint() const { return duint_; }
  unsigned slot_count() const { return slot_count_; }
  std::size_t dump_size() const { return std::size_t{duint_} * slot_count_; }
  std::string_view json_arch() const { return json_arch_; }  // "x64" / "x86"
  RegisterId pc() const { return pc_; }
  RegisterId sp() const { return sp_; }

  // Appends a kSet write for every mapped register that has a slot in
  // `changed` and whose slots are all known (`slot_known[s]` != 0).
  // Cost: proportional to the registers behind `changed`.
  void Decode(std::span<const std::uint8_t> dump, std::span<const std::uint8_t> slot_known,
              std::span<const std::uint16_t> changed, std::vector<RegisterWrite>* out) const;
  // Same for every slot.
  void DecodeAll(std::span<const std::uint8_t> dump, std::span<const std::uint8_t> slot_known,
                 std::vector<RegisterWrite>* out) const;
  // The dump of `regs` (derived region recomputed, padding 0) and which
  // slots it knows. REQUIRES: sizes dump_size() and slot_count().
  void Encode(const RegisterFile& regs, std::span<std::uint8_t> dump,
              std::span<std::uint8_t> slot_known) const;
  // The value of a register held by one piece (pc, sp) when its slots are
  // known.
  std::optional<std::uint64_t> PieceValue(std::span<const std::uint8_t> dump,
                                          std::span<const std::uint8_t> slot_known,
                                          RegisterId reg) const;
  // A register held (at least partly) by `slot`, for messages; "" if none.
  std::string_view SlotName(unsigned slot) const;

  struct PieceSpec {
    std::string_view reg;    // table name
    std::uint16_t offset;    // byte offset in the dump
    std::uint8_t size;       // bytes in the dump (the register is zero-extended)
    bool duplicate = false;  // a second copy (ymm's xmm half): written, not read
  };
  struct Spec {
    const ArchDescription* arch;
    std::string_view json_arch;
    unsigned duint, slot_count;
    std::vector<PieceSpec> pieces;
    std::uint16_t register_area;   // 80 bytes, ST order
    std::string_view fpr_prefix;   // "fpr": fpr0..fpr7 in the table
    std::uint16_t derived_offset;  // start of the derived region (284 bytes before LastError)
  };
  // Builds a layout; Unsupported when the table lacks a register.
  static Expected<X64dbgDumpLayout> Build(const Spec& spec);

 private:
  X64dbgDumpLayout() = default;
  struct Piece {
    RegisterId reg;
    std::uint16_t offset;
    std::uint8_t size;
    bool duplicate;
  };
  // A readable item: pieces_[i] for i < pieces_.size(), else fpr (i - size).
  std::size_t item_count() const { return pieces_.size() + 8; }
  bool ItemKnown(std::size_t item, std::span<const std::uint8_t> slot_known) const;
  void ItemWrite(std::size_t item, std::span<const std::uint8_t> dump, RegisterWrite* w) const;
  unsigned Top(std::span<const std::uint8_t> dump) const;

  const ArchDescription* arch_ = nullptr;
  std::string json_arch_;
  unsigned duint_ = 0, slot_count_ = 0;
  std::vector<Piece> pieces_;
  std::uint16_t area_ = 0, fstat_offset_ = 0, derived_ = 0;
  RegisterId fpr_[8] = {};
  RegisterId eflags_ = kNoRegister, fctrl_ = kNoRegister, fstat_ = kNoRegister, ftag_ = kNoRegister,
             mxcsr_ = kNoRegister;
  RegisterId pc_ = kNoRegister, sp_ = kNoRegister;
  std::vector<std::uint8_t> covered_;                    // per dump byte
  std::vector<std::vector<std::uint16_t>> items_of_;     // per slot: readable items
  std::vector<std::pair<unsigned, unsigned>> slots_of_;  // per item: [first, last] slot
};

}  // namespace backstep::core
