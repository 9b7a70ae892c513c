// PlainSyscallWriter: encodes the index's stream of plain system calls
// (backstep/core/plain_syscalls.h; layout in index_format.h,
// SyscallSkipRecord). The part builders each fill one; the parallel build
// appends the parts' streams in order.
//
// Thread-safety: one thread at a time.
#pragma once

#include <cstdint>
#include <vector>

#include "backstep/core/plain_syscalls.h"
#include "index/index_format.h"

namespace backstep::core {

class PlainSyscallWriter {
 public:
  // REQUIRES: events strictly increasing across calls, below 2^62.
  void Add(const PlainSyscall& call);
  // Adds every call of `other` (whose events follow this one's).
  void Append(const PlainSyscallWriter& other);

  std::uint64_t count() const { return count_; }
  const std::vector<SyscallSkipRecord>& skips() const { return skips_; }
  const std::vector<std::uint8_t>& stream() const { return stream_; }
  // What a reader of the encoded stream sees.
  PlainSyscalls View() const {
    return PlainSyscalls(count_, reinterpret_cast<const std::uint8_t*>(skips_.data()),
                         stream_.data(), stream_.size());
  }

 private:
  std::uint64_t count_ = 0;
  std::uint64_t last_event_ = 0;
  std::uint64_t last_tid_ = 0;
  std::vector<SyscallSkipRecord> skips_;
  std::vector<std::uint8_t> stream_;
};

}  // namespace backstep::core
