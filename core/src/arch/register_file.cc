#include "backstep/core/register_file.h"

#include <algorithm>
#include <cassert>
#include <cstring>

namespace backstep::core {

RegisterFile::RegisterFile(const ArchDescription& arch)
    : arch_(&arch),
      storage_(arch.storage_size(), 0),
      known_((arch.register_count() + 63) / 64, 0) {}

std::span<const std::uint8_t> RegisterFile::bytes(RegisterId id) const {
  const RegisterInfo& r = arch_->info(id);
  assert(!r.derived);
  return std::span<const std::uint8_t>(storage_).subspan(r.storage_offset, r.size);
}

std::uint64_t RegisterFile::u64(RegisterId id) const {
  const RegisterInfo& r = arch_->info(id);
  assert(!r.derived && r.size <= 8);
  std::uint64_t v = 0;
  for (unsigned i = 0; i < r.size; ++i) {
    v |= std::uint64_t{storage_[r.storage_offset + i]} << (8 * i);
  }
  return v;
}

void RegisterFile::Set(RegisterId id, std::span<const std::uint8_t> value) {
  const RegisterInfo& r = arch_->info(id);
  assert(!r.derived && value.size() >= r.size);
  std::uint8_t* to = storage_.data() + r.storage_offset;
  // Most writes are of 8-byte registers: a copy of constant size is inlined
  // (no library call; this runs for every register write of every event).
  if (r.size == 8) {
    std::memcpy(to, value.data(), 8);
  } else {
    std::memcpy(to, value.data(), r.size);
  }
  known_[id >> 6] |= std::uint64_t{1} << (id & 63);
}

void RegisterFile::SetU64(RegisterId id, std::uint64_t value) {
  const RegisterInfo& r = arch_->info(id);
  assert(!r.derived);
  // Little-endian, truncated to the register's size, zero-extended past 8.
  for (unsigned i = 0; i < r.size; ++i) {
    storage_[r.storage_offset + i] = i < 8 ? static_cast<std::uint8_t>(value >> (8 * i)) : 0;
  }
  known_[id >> 6] |= std::uint64_t{1} << (id & 63);
}

void RegisterFile::SetUnknown(RegisterId id) {
  const RegisterInfo& r = arch_->info(id);
  if (r.derived) return;
  std::memset(storage_.data() + r.storage_offset, 0, r.size);
  known_[id >> 6] &= ~(std::uint64_t{1} << (id & 63));
}

void RegisterFile::Clear() {
  std::fill(storage_.begin(), storage_.end(), 0);
  std::fill(known_.begin(), known_.end(), 0);
}

void RegisterFile::ApplyOther(const RegisterWrite& write) {
  const RegisterInfo& r = arch_->info(write.reg);
  assert(!r.derived && r.size <= sizeof(write.value));
  if (write.op == RegisterOp::kSet) {
    Set(write.reg, std::span<const std::uint8_t>(write.value, r.size));
    return;
  }
  std::uint8_t* p = storage_.data() + r.storage_offset;
  if (!known(write.reg)) return;  // an operation on an unknown value stays unknown
  switch (write.op) {
    case RegisterOp::kAdd: {
      unsigned carry = 0;  // byte-wise ripple carry: any size, modulo 2^(8*size)
      for (unsigned i = 0; i < r.size; ++i) {
        const unsigned sum = p[i] + write.value[i] + carry;
        p[i] = static_cast<std::uint8_t>(sum);
        carry = sum >> 8;
      }
      break;
    }
    case RegisterOp::kAnd:
      for (unsigned i = 0; i < r.size; ++i) p[i] &= write.value[i];
      break;
    case RegisterOp::kOr:
      for (unsigned i = 0; i < r.size; ++i) p[i] |= write.value[i];
      break;
    case RegisterOp::kSet:
      break;
  }
}

bool RegisterFile::Read(RegisterId id, std::span<std::uint8_t> out) const {
  const RegisterInfo& r = arch_->info(id);
  assert(out.size() >= r.size);
  if (!r.derived) {
    std::memcpy(out.data(), storage_.data() + r.storage_offset, r.size);
    return known(id);
  }
  std::fill(out.begin(), out.begin() + r.size, 0);
  // The only derived registers are the x87 stack's st0..st7.
  const X87Stack& x87 = arch_->x87();
  if (x87.st0 == kNoRegister || id < x87.st0 || id >= x87.st0 + 8) return false;
  if (!known(x87.fstat)) return false;
  const unsigned top = (u64(x87.fstat) >> 11) & 7;
  const auto fpr = static_cast<RegisterId>(x87.fpr0 + ((top + (id - x87.st0)) & 7));
  if (!known(fpr)) return false;
  std::memcpy(out.data(), storage_.data() + arch_->info(fpr).storage_offset, r.size);
  return true;
}

void RegisterFile::Restore(std::span<const std::uint8_t> storage,
                           std::span<const std::uint64_t> known) {
  assert(storage.size() == storage_.size() && known.size() == known_.size());
  std::copy(storage.begin(), storage.end(), storage_.begin());
  std::copy(known.begin(), known.end(), known_.begin());
  // Keep the invariant "unknown registers are zero" that operator== relies on.
  for (std::size_t i = 0; i < arch_->register_count(); ++i) {
    const auto id = static_cast<RegisterId>(i);
    if (!arch_->info(id).derived && !this->known(id)) SetUnknown(id);
  }
  // Derived registers are never known, and no bit past the last register.
  for (std::size_t i = 0; i < known_.size() * 64; ++i) {
    if (i >= arch_->register_count() || arch_->info(static_cast<RegisterId>(i)).derived) {
      known_[i >> 6] &= ~(std::uint64_t{1} << (i & 63));
    }
  }
}

bool RegisterFile::operator==(const RegisterFile& other) const {
  return arch_ == other.arch_ && known_ == other.known_ && storage_ == other.storage_;
}

}  // namespace backstep::core
