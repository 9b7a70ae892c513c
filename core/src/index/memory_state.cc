#include "index/memory_state.h"

#include <algorithm>
#include <cstring>

namespace backstep::core {

void ReadNativeMemory(const TraceIndex& index, const ImageReadFn& image, std::uint64_t p,
                      Address address, std::span<std::uint8_t> out, std::span<std::uint8_t> known) {
  std::fill(out.begin(), out.end(), 0);
  std::fill(known.begin(), known.end(), 0);
  const std::optional<std::uint64_t> clear = index.LastMemoryClearBefore(p);
  std::optional<std::uint64_t> next_clear;
  bool next_clear_done = false;
  std::uint8_t image_values[kPageSize], image_known[kPageSize];
  for (std::size_t done = 0; done < out.size();) {
    const Address a = address + done;
    const std::size_t n =
        std::min<std::size_t>(out.size() - done, kPageSize - (a & (kPageSize - 1)));
    std::uint8_t* v = out.data() + done;
    std::uint8_t* k = known.data() + done;
    done += n;
    index.WriteState(a, a + n, clear.value_or(0), p, v, k);
    auto all_known = [&] { return std::all_of(k, k + n, [](std::uint8_t b) { return b != 0; }); };
    if (all_known()) continue;
    if (!clear && image) {
      image(a, {image_values, n}, {image_known, n});
      for (std::size_t i = 0; i < n; ++i) {
        if (!k[i] && image_known[i]) {
          v[i] = image_values[i];
          k[i] = 1;
        }
      }
      if (all_known()) continue;
    }
    if (index.records_reads()) {
      if (!next_clear_done) {
        next_clear = index.NextMemoryClearFrom(p);
        next_clear_done = true;
      }
      index.InferredState(a, a + n, clear ? *clear + 1 : 0, next_clear.value_or(kNoEvent), v, k);
    }
  }
}

}  // namespace backstep::core
