// InferenceTracker: decides, while the index is built, which recorded reads
// teach something new (the inferred-value list).
//
// Value inference (docs/architecture.md): a byte read by event r is known back to the
// previous write of that byte or memory clear, and forward to the next one.
// Call the stretch between two such "definitions" of a byte an epoch of the
// byte. At build time the tracker keeps, per page, which bytes are known in
// the current epoch: written, read, or (before the first clear) held by the
// initial image. A read of a byte unknown so far is the first access of the
// byte's epoch, and it is a read; the index stores it in the inferred list.
// A query for a byte unknown at p then only has to look for an inferred
// entry between the last clear before p and the next clear at or after p:
// at most one per byte and clear epoch, so the lookup is bounded.
//
// Memory: 520 bytes per page touched since the last clear (a known bitmap),
// only for traces that record reads.
//
// Thread-safety: one thread at a time.
#pragma once

#include <array>
#include <cstdint>
#include <unordered_map>

#include "backstep/core/trace_reader.h"
#include "index/index_format.h"

namespace backstep::core {

// Per page, one bit per byte (bit i % 64 of word i / 64).
using KnownPages = std::unordered_map<std::uint64_t, std::array<std::uint64_t, kPageSize / 64>>;

class InferenceTracker {
 public:
  // `use_initial_image`: before the first clear, the initial image's bytes
  // count as known (false for a part of a parallel build that does not start
  // the trace: whether a clear came before it is only known at the merge).
  explicit InferenceTracker(const TraceReader& reader, bool use_initial_image = true)
      : reader_(reader), use_initial_image_(use_initial_image) {}

  void ClearMemory() { ++epoch_; }
  void Write(std::uint64_t page, std::uint32_t offset, std::uint32_t length);
  // Calls fn(offset, length) for each run of bytes of a read piece that were
  // unknown, and marks the piece known.
  template <class Fn>
  void Read(std::uint64_t page, std::uint32_t offset, std::uint32_t length, Fn&& fn) {
    PageKnown& known = Get(page);
    std::uint32_t run = 0, start = offset;
    for (std::uint32_t i = offset; i < offset + length; ++i) {
      const bool k = (known.bits[i / 64] >> (i % 64)) & 1;
      if (!k) {
        if (run == 0) start = i;
        ++run;
        known.bits[i / 64] |= std::uint64_t(1) << (i % 64);
      } else if (run > 0) {
        fn(start, run);
        run = 0;
      }
    }
    if (run > 0) fn(start, run);
  }
  std::uint64_t memory_bytes() const { return pages_.size() * (sizeof(PageKnown) + 32); }
  // The bytes known in the current epoch (written or read since the last
  // clear, plus the image's where it counts); the tracker is then empty.
  KnownPages TakeKnown();

 private:
  struct PageKnown {
    std::uint64_t epoch = ~std::uint64_t(0);
    std::uint64_t bits[kPageSize / 64];
  };
  PageKnown& Get(std::uint64_t page);

  const TraceReader& reader_;
  bool use_initial_image_;
  std::uint64_t epoch_ = 0;
  std::unordered_map<std::uint64_t, PageKnown> pages_;
};

}  // namespace backstep::core
