#include "formats/initial_image.h"

#include <algorithm>
#include <vector>

namespace backstep::core {

std::optional<Address> FirstKnownInitialByte(const TraceHeader& header,
                                             const InitialMemoryFn& initial_memory) {
  constexpr std::size_t kPiece = std::size_t{1} << 16;
  if (!initial_memory) return std::nullopt;
  std::vector<std::uint8_t> piece(kPiece), known(kPiece);
  for (const MemoryRegion& r : header.regions) {
    for (std::uint64_t at = 0; at < r.size; at += kPiece) {
      const std::size_t n = static_cast<std::size_t>(std::min<std::uint64_t>(kPiece, r.size - at));
      initial_memory(r.start + at, {piece.data(), n}, {known.data(), n});
      const auto first =
          std::find_if(known.begin(), known.begin() + n, [](std::uint8_t k) { return k != 0; });
      if (first != known.begin() + n) return r.start + at + (first - known.begin());
    }
  }
  return std::nullopt;
}

}  // namespace backstep::core
