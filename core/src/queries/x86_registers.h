// Capstone's x86 registers as bytes of the X86_64() table.
//
// Capstone names a register operand by an x86_reg id (X86_REG_EAX,
// X86_REG_AH, X86_REG_YMM3, ...); backstep stores registers as the table's
// RegisterIds (rax, xmm3 + ymm3h, ...). A RegisterBytes is the value of one
// capstone register as a concatenation of slices: bytes [lo, hi) of table
// registers, least significant first. The mapping is by ids on both sides
// (capstone's enum and the table's fixed gdb-ordered ids, checked against
// the table by x86_registers_test.cc), never by names.
//
// Thread-safety: pure functions of constants.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "backstep/core/arch.h"
#include "backstep/core/register_file.h"

namespace backstep::core::x86 {

struct RegisterSlice {
  RegisterId id = kNoRegister;
  std::uint8_t lo = 0, hi = 0;  // bytes [lo, hi) of `id`
  bool operator==(const RegisterSlice&) const = default;
};

struct RegisterBytes {
  std::vector<RegisterSlice> slices;
  std::uint32_t size() const;
  bool empty() const { return slices.empty(); }
  // Whether any byte of this is a byte of `other`.
  bool Overlaps(const RegisterBytes& other) const;
  bool Overlaps(RegisterId id) const;
  // Byte offset of `other`'s first byte within this value, if it is one of
  // this value's bytes.
  std::optional<std::uint32_t> OffsetOf(const RegisterSlice& other) const;
  // Bytes [offset, offset + size) of the value (clamped to it).
  RegisterBytes Sub(std::uint32_t offset, std::uint32_t size) const;
  bool operator==(const RegisterBytes&) const = default;
};

// The bytes of capstone register `reg` (an x86_reg) in X86_64(); nullopt
// for registers the table does not store (x87 st(i), mm0-7, cr/dr, bnd, ...).
std::optional<RegisterBytes> BytesOf(unsigned reg);

// What writing capstone register `reg` changes, per the architecture: a
// 32-bit general register write zero-extends to 64 bits; a VEX/EVEX write
// of xmm/ymm (`vex`) zeroes the rest of the zmm register.
std::optional<RegisterBytes> WrittenBytesOf(unsigned reg, bool vex);

// fs_base / gs_base for the segment register X86_REG_FS / X86_REG_GS,
// nullopt for others (their base is 0 in 64-bit mode).
std::optional<RegisterId> SegmentBaseOf(unsigned segment_reg);

// The value's bytes in `regs`; known[i] per byte.
void Read(const RegisterFile& regs, const RegisterBytes& bytes, std::vector<std::uint8_t>& value,
          std::vector<std::uint8_t>& known);
// The value as an integer (for address arithmetic, at most 8 bytes);
// nullopt when a byte is unknown.
std::optional<std::uint64_t> ReadInteger(const RegisterFile& regs, const RegisterBytes& bytes);

}  // namespace backstep::core::x86
