#include "index/inference_tracker.h"

#include <algorithm>
#include <cstring>

namespace backstep::core {

InferenceTracker::PageKnown& InferenceTracker::Get(std::uint64_t page) {
  PageKnown& known = pages_[page];
  if (known.epoch == epoch_) return known;
  known.epoch = epoch_;
  std::memset(known.bits, 0, sizeof(known.bits));
  if (epoch_ == 0 && use_initial_image_) {
    // Before the first clear, the initial image's bytes are known.
    std::uint8_t values[kPageSize], image_known[kPageSize];
    reader_.ReadInitialMemory(page << kPageBits, values, image_known);
    for (std::uint32_t i = 0; i < kPageSize; ++i) {
      if (image_known[i]) known.bits[i / 64] |= std::uint64_t(1) << (i % 64);
    }
  }
  return known;
}

KnownPages InferenceTracker::TakeKnown() {
  KnownPages out;
  // Erase as we go: the copy never doubles the memory.
  for (auto it = pages_.begin(); it != pages_.end(); it = pages_.erase(it)) {
    if (it->second.epoch != epoch_) continue;
    std::copy(std::begin(it->second.bits), std::end(it->second.bits), out[it->first].begin());
  }
  return out;
}

void InferenceTracker::Write(std::uint64_t page, std::uint32_t offset, std::uint32_t length) {
  PageKnown& known = Get(page);
  for (std::uint32_t i = offset; i < offset + length; ++i) {
    known.bits[i / 64] |= std::uint64_t(1) << (i % 64);
  }
}

}  // namespace backstep::core
