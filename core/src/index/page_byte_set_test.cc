#include "index/page_byte_set.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <vector>

namespace backstep::core {
namespace {

// Random flag runs at every alignment, then random AnyIn/TakeRange calls:
// the set answers as a plain array of booleans does, lines() included.
TEST(PageByteSetTest, AgreesWithAnArrayOfBooleans) {
  std::mt19937 rng(7);
  for (int round = 0; round < 120; ++round) {
    const std::uint32_t o1 = rng() % kPageSize;
    const std::uint32_t n = rng() % (kPageSize - o1 + 1);
    std::vector<std::uint8_t> flags(n);
    const std::uint8_t kinds[] = {0, 1, 2, 0x80, 0x7f, 0xff};
    for (auto& f : flags) f = kinds[rng() % (round % 3 == 0 ? 2 : std::size(kinds))];
    PageByteSet set;
    set.AddZeros(o1, flags.data(), n);
    std::vector<bool> in(kPageSize, false);
    for (std::uint32_t i = 0; i < n; ++i) in[o1 + i] = flags[i] == 0;
    auto lines = [&] {
      std::uint64_t m = 0;
      for (std::uint32_t i = 0; i < kPageSize; ++i) m |= std::uint64_t{in[i]} << (i / 64);
      return m;
    };
    ASSERT_EQ(set.lines(), lines()) << "round " << round;
    for (int op = 0; op < 200; ++op) {
      const std::uint32_t a = rng() % (kPageSize + 1);
      const std::uint32_t len = op % 4 == 0 ? rng() % 600 : rng() % 20;
      const std::uint32_t z = std::min<std::uint32_t>(kPageSize, a + len);
      const bool any = std::any_of(in.begin() + a, in.begin() + z, [](bool b) { return b; });
      ASSERT_EQ(set.AnyIn(a, z), any) << "round " << round << " [" << a << ", " << z << ")";
      if (op % 2) {
        std::vector<std::uint32_t> taken, expected;
        set.TakeRange(a, z, [&](std::uint32_t w, std::uint64_t bits) {
          PageByteSet::ForEach(w, bits, [&](std::uint32_t i) { taken.push_back(i); });
        });
        for (std::uint32_t i = a; i < z; ++i) {
          if (in[i]) expected.push_back(i);
        }
        ASSERT_EQ(taken, expected) << "round " << round << " [" << a << ", " << z << ")";
        std::fill(in.begin() + a, in.begin() + z, false);
        ASSERT_EQ(set.lines(), lines());
        ASSERT_EQ(set.empty(), lines() == 0);
      }
    }
  }
}

}  // namespace
}  // namespace backstep::core
