// RegisterFile: one thread's registers at one position, with a known bit per
// register.
//
// Storage is one contiguous byte array laid out by the ArchDescription
// (RegisterInfo::storage_offset), values little-endian, plus a bitmap of
// known registers. Derived registers (x87 st0..st7) have no storage: read
// them with Read().
//
// Thread-safety: a value type; not synchronized.
#pragma once

#include <bit>
#include <cassert>
#include <cstdint>
#include <cstring>
#include <span>
#include <vector>

#include "backstep/core/arch.h"

namespace backstep::core {

enum class RegisterOp : unsigned char { kSet = 0, kAdd = 1, kAnd = 2, kOr = 3 };

// A change of one register made by an event. `value` holds info(reg).size
// bytes (little-endian). For kAdd/kAnd/kOr the operand has the register's
// size; applying an operation to an unknown register leaves it unknown.
struct RegisterWrite {
  RegisterId reg = kNoRegister;
  RegisterOp op = RegisterOp::kSet;
  std::uint8_t value[64] = {};
};

class RegisterFile {
 public:
  // All registers unknown. `arch` must outlive the file.
  explicit RegisterFile(const ArchDescription& arch);

  const ArchDescription& arch() const { return *arch_; }
  bool known(RegisterId id) const { return (known_[id >> 6] >> (id & 63)) & 1; }
  // The register's bytes (zero when unknown). REQUIRES: !info(id).derived.
  std::span<const std::uint8_t> bytes(RegisterId id) const;
  // Value of a register of at most 8 bytes, zero-extended. REQUIRES: size <= 8.
  std::uint64_t u64(RegisterId id) const;

  // Sets the value (size bytes) and marks it known.
  void Set(RegisterId id, std::span<const std::uint8_t> value);
  void SetU64(RegisterId id, std::uint64_t value);
  void SetUnknown(RegisterId id);
  // Every register unknown and zero.
  void Clear();
  // Applies a write (set or operation). Once per register write of every
  // event (the index build's and seeks' hot loop): 8- and 4-byte registers
  // (most writes) inline, as word operations, the call saved; other sizes
  // in ApplyOther.
  void Apply(const RegisterWrite& write) {
    const RegisterInfo& r = arch_->info(write.reg);
    assert(!r.derived && r.size <= sizeof(write.value));
    if constexpr (std::endian::native == std::endian::little) {
      if (r.size == 8) return ApplyWord<std::uint64_t>(write, r.storage_offset);
      if (r.size == 4) return ApplyWord<std::uint32_t>(write, r.storage_offset);
    }
    ApplyOther(write);
  }

  // Fills `out` (info(id).size bytes) for any register, derived or not;
  // returns whether the value is known. x87 st(i) = fpr[(TOP + i) & 7].
  bool Read(RegisterId id, std::span<std::uint8_t> out) const;

  // Raw storage and known bitmap, for keyframes. The sizes are fixed by the
  // architecture; Restore() requires the same sizes.
  std::span<const std::uint8_t> raw_storage() const { return storage_; }
  std::span<const std::uint64_t> raw_known() const { return known_; }
  void Restore(std::span<const std::uint8_t> storage, std::span<const std::uint64_t> known);

  bool operator==(const RegisterFile& other) const;

 private:
  // Apply() for a register of sizeof(Word) bytes on a little-endian host:
  // the same result as ApplyOther's byte loops.
  template <typename Word>
  void ApplyWord(const RegisterWrite& write, std::uint32_t storage_offset) {
    std::uint8_t* p = storage_.data() + storage_offset;
    if (write.op == RegisterOp::kSet) {
      std::memcpy(p, write.value, sizeof(Word));
      known_[write.reg >> 6] |= std::uint64_t{1} << (write.reg & 63);
      return;
    }
    if (!known(write.reg)) return;  // an operation on an unknown value stays unknown
    Word value, operand;
    std::memcpy(&value, p, sizeof(Word));
    std::memcpy(&operand, write.value, sizeof(Word));
    if (write.op == RegisterOp::kAdd) {
      value = static_cast<Word>(value + operand);
    } else if (write.op == RegisterOp::kAnd) {
      value &= operand;
    } else {
      value |= operand;
    }
    std::memcpy(p, &value, sizeof(Word));
  }
  // Apply() for registers of other sizes (any size on a big-endian host).
  void ApplyOther(const RegisterWrite& write);

  const ArchDescription* arch_;
  std::vector<std::uint8_t> storage_;
  std::vector<std::uint64_t> known_;
};

}  // namespace backstep::core
