// UsercornArch: how a usercorn trace's architecture maps onto backstep's.
//
// A trace names its architecture in the header ("x86_64", "x86", "arm",
// "arm64", ...) and its registers by Unicorn enum values (REG/SPREG ops).
// Each supported architecture has one table (usercorn_registers.cc) whose
// entries name the canonical register (ArchDescription::Find) each Unicorn
// enum feeds; the table is resolved once. Adding i386, ARM or AArch64 means
// adding a table (docs/formats/usercorn.md §2.4 lists their enums) and the
// ArchDescription it points at; nothing else here changes.
//
// Two kinds of entries:
//   tracked   the registers usercorn's tracer dumps (x86_64: the 16 GPRs).
//             Its keyframe sends REG only for non-zero values, so at
//             position 0 a tracked register is known, 0 unless set.
//   optional  registers a trace may carry (eflags, selectors, fs/gs base,
//             x87 and mxcsr; xmm0-15, fpr0-7 and YMMn through SPREG):
//             unknown until a REG/SPREG sets them. backstep record sends
//             them; usercorn's tracer does not.
// The PC's enum (x86_64: rip, 41) is not in the table: JMP and STEP drive
// the pc, and a REG of it is ignored, as usercorn's replay ignores it.
//
// Thread-safety: tables are immutable after first use; share freely.
#pragma once

#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "backstep/core/arch.h"
#include "backstep/core/expected.h"

namespace backstep::core {

struct UnicornRegister {
  std::uint16_t unicorn = 0;  // UC_<ARCH>_REG_* value
  std::string_view name;      // canonical name in the ArchDescription
  bool tracked = false;
  // A wide register stored as two: the bytes past `name`'s size go to
  // `high` (x86_64 YMMn: xmmN + ymmNh; FIP, a u64: fioff + fiseg). Empty
  // for the others.
  std::string_view high = {};
  // A third part past `high` (x86_64 ZMMn: xmmN + ymmNh + zmmNh).
  std::string_view top = {};
};

inline constexpr std::uint16_t kNoUnicornRegister = 0xffff;

class UsercornArch {
 public:
  UsercornArch(std::string_view name, const ArchDescription& arch, std::uint16_t pc_enum,
               std::span<const UnicornRegister> table);

  std::string_view name() const { return name_; }  // header arch string
  const ArchDescription& arch() const { return *arch_; }
  std::uint16_t pc_enum() const { return pc_enum_; }
  // Canonical register for a Unicorn enum; kNoRegister when the table has
  // none (and for the PC's enum).
  RegisterId Find(std::uint16_t unicorn) const {
    return unicorn < by_enum_.size() ? by_enum_[unicorn] : kNoRegister;
  }
  // For a wide enum, the register holding the bytes past Find()'s size;
  // kNoRegister for the others.
  RegisterId FindHigh(std::uint16_t unicorn) const {
    return unicorn < high_.size() ? high_[unicorn] : kNoRegister;
  }
  // For a three-part enum (ZMMn), the register past FindHigh()'s bytes.
  RegisterId FindTop(std::uint16_t unicorn) const {
    return unicorn < top_.size() ? top_[unicorn] : kNoRegister;
  }
  // Bytes a SPREG of `unicorn` holds: all its parts.
  std::size_t WideSize(std::uint16_t unicorn) const;
  // The wide enum whose high part `high` is (ymm3h -> YMM3, fiseg -> FIP);
  // kNoUnicornRegister when `high` is no enum's high part.
  std::uint16_t WideOf(RegisterId high) const {
    return high < wide_of_high_.size() ? wide_of_high_[high] : kNoUnicornRegister;
  }
  // For either half of a u64 enum carried as two registers (fioff and fiseg
  // of FIP): that enum, written as one REG with both halves. Else
  // kNoUnicornRegister.
  std::uint16_t SplitU64Of(RegisterId id) const;
  // Unicorn enum for a canonical register (the first table entry naming it);
  // kNoUnicornRegister when the format cannot carry it.
  std::uint16_t UnicornOf(RegisterId id) const {
    return id < by_register_.size() ? by_register_[id] : kNoUnicornRegister;
  }
  // Tracked registers, in the tracer's keyframe order.
  std::span<const RegisterId> tracked() const { return tracked_; }
  bool IsTracked(RegisterId id) const;

 private:
  std::string_view name_;
  const ArchDescription* arch_;
  std::uint16_t pc_enum_;
  std::vector<RegisterId> by_enum_;
  std::vector<RegisterId> high_;  // by enum: FindHigh()
  std::vector<RegisterId> top_;   // by enum: FindTop()
  std::vector<std::uint16_t> by_register_;
  std::vector<std::uint16_t> wide_of_high_;  // by register: WideOf()
  std::vector<RegisterId> tracked_;
};

// The table for a header's arch string. Unsupported, naming the
// architecture, for every other one ("x86", "arm", "arm64", "mips", ...).
Expected<const UsercornArch*> FindUsercornArch(std::string_view name);

// The x86_64 table (also what the writers use).
const UsercornArch& UsercornX86_64();
// The 32-bit "x86" table, over I386().
const UsercornArch& UsercornX86();

}  // namespace backstep::core
