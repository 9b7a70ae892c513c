// PageByteSet: a set of byte offsets of one 4 KiB page, one bit per byte.
//
// The write-state walk (index_memory.cc) keeps the asked bytes still
// undecided in one: testing whether an entry's bytes [a, z) hold an
// undecided one costs one or two word operations instead of a loop over
// the bytes, and since word i holds the bytes of the page's 64-byte line i
// (the unit of BlockRecord::line_mask), lines() gives the lines with an
// undecided byte, to skip whole blocks by their line mask.
//
// Contract: offsets are < kPageSize and ranges [a, z) have a <= z <=
// kPageSize. Not thread-safe (a value type, no allocation).
#pragma once

#include <algorithm>
#include <bit>
#include <cstdint>
#include <cstring>

#include "index/index_format.h"

namespace backstep::core {

class PageByteSet {
 public:
  static constexpr std::uint32_t kWords = kPageSize / 64;
  static_assert(kWords == 64, "one word per 64-byte line, one line-mask bit per word");

  // Adds the offsets o1 + i, i in [0, n), with flags[i] == 0.
  // REQUIRES: o1 + n <= kPageSize.
  void AddZeros(std::uint32_t o1, const std::uint8_t* flags, std::uint32_t n) {
    std::uint32_t i = 0;
    // Eight flags at a time: the high bit of each zero byte, gathered into
    // eight bits by one multiplication.
    for (; i + 8 <= n; i += 8) {
      std::uint64_t x;
      std::memcpy(&x, flags + i, 8);
      constexpr std::uint64_t kLow7 = 0x7f7f7f7f7f7f7f7f;
      const std::uint64_t zero_high = ~(((x & kLow7) + kLow7) | x | kLow7);
      const std::uint64_t group = ((zero_high >> 7) * 0x0102040810204080) >> 56;
      const std::uint32_t b = o1 + i, shift = b % 64;
      words_[b / 64] |= group << shift;
      if (shift > 56) words_[b / 64 + 1] |= group >> (64 - shift);
    }
    for (; i < n; ++i) {
      const std::uint32_t b = o1 + i;
      words_[b / 64] |= static_cast<std::uint64_t>(flags[i] == 0) << (b % 64);
    }
    lines_ = 0;
    for (std::uint32_t w = 0; w < kWords; ++w) lines_ |= std::uint64_t{words_[w] != 0} << w;
  }

  // Whether some offset in [a, z) is in the set.
  bool AnyIn(std::uint32_t a, std::uint32_t z) const {
    if (a >= z) return false;
    const std::uint32_t first = a / 64, last = (z - 1) / 64;
    if (first == last) return (words_[first] & Mask(a % 64, (z - 1) % 64)) != 0;
    if (words_[first] & Mask(a % 64, 63)) return true;
    for (std::uint32_t w = first + 1; w < last; ++w) {
      if (words_[w]) return true;
    }
    return (words_[last] & Mask(0, (z - 1) % 64)) != 0;
  }

  // Removes [a, z) from the set; calls taken(word, bits) for each word w
  // that held some of its offsets (bit j: offset 64w + j).
  template <class Fn>
  void TakeRange(std::uint32_t a, std::uint32_t z, Fn&& taken) {
    while (a < z) {
      const std::uint32_t w = a / 64;
      const std::uint32_t hi = std::min<std::uint32_t>(z - 1, w * 64 + 63);
      TakeBits(w, words_[w] & Mask(a % 64, hi % 64), taken);
      a = hi + 1;
    }
  }
  void TakeRange(std::uint32_t a, std::uint32_t z) {
    TakeRange(a, z, [](std::uint32_t, std::uint64_t) {});
  }

  // Removes the offsets whose bit is set in `page_bits` (kPageSize / 8
  // bytes, bit i % 8 of byte i / 8 for offset i, as page snapshots hold
  // them); calls taken(word, bits) as TakeRange does.
  template <class Fn>
  void TakeWhere(const std::uint8_t* page_bits, Fn&& taken) {
    for (std::uint64_t lines = lines_; lines != 0; lines &= lines - 1) {
      const auto w = static_cast<std::uint32_t>(std::countr_zero(lines));
      std::uint64_t m = 0;
      for (std::uint32_t k = 0; k < 8; ++k) m |= std::uint64_t{page_bits[w * 8 + k]} << (8 * k);
      TakeBits(w, words_[w] & m, taken);
    }
  }

  bool empty() const { return lines_ == 0; }

  // Calls fn(offset) for each bit of `bits`, bits of word w, in order.
  template <class Fn>
  static void ForEach(std::uint32_t w, std::uint64_t bits, Fn&& fn) {
    for (; bits != 0; bits &= bits - 1) {
      fn(w * 64 + static_cast<std::uint32_t>(std::countr_zero(bits)));
    }
  }

  // Bit i: line i (bytes [64i, 64i + 64)) holds an offset of the set.
  std::uint64_t lines() const { return lines_; }

 private:
  template <class Fn>
  void TakeBits(std::uint32_t w, std::uint64_t m, Fn& taken) {
    if (m == 0) return;
    words_[w] &= ~m;
    if (words_[w] == 0) lines_ &= ~(std::uint64_t{1} << w);
    taken(w, m);
  }

  // Bits lo..hi of a word (lo <= hi < 64).
  static std::uint64_t Mask(std::uint32_t lo, std::uint32_t hi) {
    return (~std::uint64_t{0} >> (63 - hi)) & (~std::uint64_t{0} << lo);
  }

  std::uint64_t words_[kWords] = {};
  std::uint64_t lines_ = 0;
};

}  // namespace backstep::core
