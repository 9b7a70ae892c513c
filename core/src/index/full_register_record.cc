#include "index/full_register_record.h"

#include <algorithm>
#include <bit>
#include <cstring>

#include "index/index_format.h"

namespace backstep::core {

std::uint64_t FullRecordStorageWords(std::uint64_t storage_size) {
  return Align8(storage_size) / 8;
}

std::uint64_t FullRecordBitmapWords(std::uint64_t storage_size) {
  return (FullRecordStorageWords(storage_size) + 63) / 64;
}

std::uint32_t EncodeFullRecordStorage(std::span<const std::uint8_t> storage,
                                      std::vector<std::uint64_t>& out) {
  const std::uint64_t words = FullRecordStorageWords(storage.size());
  out.assign(FullRecordBitmapWords(storage.size()), 0);
  std::uint32_t count = 0;
  for (std::uint64_t i = 0; i < words; ++i) {
    std::uint64_t word = 0;
    const std::size_t at = 8 * i;
    std::memcpy(&word, storage.data() + at, std::min<std::size_t>(8, storage.size() - at));
    if (word == 0) continue;
    out[i / 64] |= std::uint64_t(1) << (i % 64);
    out.push_back(word);
    ++count;
  }
  return count;
}

bool DecodeFullRecordStorage(const std::uint8_t* body, std::uint64_t available, std::uint32_t count,
                             std::uint64_t known_words, std::span<std::uint8_t> storage,
                             const std::uint8_t** known) {
  const std::uint64_t words = FullRecordStorageWords(storage.size());
  const std::uint64_t bitmap_words = FullRecordBitmapWords(storage.size());
  if (available / 8 < bitmap_words || available / 8 - bitmap_words < known_words ||
      available / 8 - bitmap_words - known_words < count) {
    return false;
  }
  std::uint64_t set = 0;
  for (std::uint64_t b = 0; b < bitmap_words; ++b) {
    const std::uint64_t bits = LoadRecord<std::uint64_t>(body + 8 * b);
    const std::uint64_t valid = std::min<std::uint64_t>(64, words - 64 * b);
    if (valid < 64 && (bits >> valid) != 0) return false;
    set += std::popcount(bits);
  }
  if (set != count) return false;
  std::fill(storage.begin(), storage.end(), 0);
  const std::uint8_t* next = body + 8 * bitmap_words;
  for (std::uint64_t b = 0; b < bitmap_words; ++b) {
    for (std::uint64_t bits = LoadRecord<std::uint64_t>(body + 8 * b); bits != 0;
         bits &= bits - 1) {
      const std::size_t at = 8 * (64 * b + std::countr_zero(bits));
      std::memcpy(storage.data() + at, next, std::min<std::size_t>(8, storage.size() - at));
      next += 8;
    }
  }
  *known = next;
  return true;
}

}  // namespace backstep::core
