#include "trace_target/unfilled_memory.h"

#include <algorithm>

namespace backstep::gdbstub {

void FillUnfilledMappings(const std::vector<core::Mapping>& maps, core::Address addr,
                          std::span<std::uint8_t> out, std::span<std::uint8_t> known) {
  if (out.empty()) return;
  const core::Address last = addr + (out.size() - 1);  // inclusive: the range may end at 2^64
  // The first mapping that ends after addr.
  auto it = std::upper_bound(maps.begin(), maps.end(), addr,
                             [](core::Address a, const core::Mapping& m) { return a < m.start; });
  if (it != maps.begin() && std::prev(it)->end() - 1 >= addr) --it;
  for (; it != maps.end() && it->start <= last; ++it) {
    if (!it->unfilled || it->size == 0) continue;
    const core::Address from = std::max(it->start, addr);
    const core::Address to = std::min(it->start + (it->size - 1), last);  // inclusive
    for (core::Address a = from;; ++a) {
      const std::size_t i = static_cast<std::size_t>(a - addr);
      if (known[i] == 0) {
        out[i] = 0;
        known[i] = 1;
      }
      if (a == to) break;
    }
  }
}

}  // namespace backstep::gdbstub
