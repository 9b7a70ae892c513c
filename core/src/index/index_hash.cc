#include "index/index_hash.h"

#include <cstring>

namespace backstep::core {
namespace {

constexpr std::uint64_t kP1 = 0x9E3779B185EBCA87ull, kP2 = 0xC2B2AE3D27D4EB4Full,
                        kP3 = 0x165667B19E3779F9ull, kP4 = 0x85EBCA77C2B2AE63ull,
                        kP5 = 0x27D4EB2F165667C5ull;

inline std::uint64_t Rotl(std::uint64_t x, int r) { return (x << r) | (x >> (64 - r)); }
inline std::uint64_t Read64(const std::uint8_t* p) {
  std::uint64_t v;
  std::memcpy(&v, p, 8);
  return v;
}
inline std::uint64_t Round(std::uint64_t acc, std::uint64_t input) {
  return Rotl(acc + input * kP2, 31) * kP1;
}
inline std::uint64_t Merge(std::uint64_t acc, std::uint64_t v) {
  return (acc ^ Round(0, v)) * kP1 + kP4;
}

}  // namespace

Hash64::Hash64(std::uint64_t seed)
    : v_{seed + kP1 + kP2, seed + kP2, seed, seed - kP1}, seed_(seed) {}

void Hash64::Update(std::span<const std::uint8_t> bytes) {
  if (bytes.empty()) return;  // memcpy from an empty span's null data() is undefined
  const std::uint8_t* p = bytes.data();
  std::size_t n = bytes.size();
  total_ += n;
  if (buffered_ > 0) {
    const std::size_t take = std::min<std::size_t>(n, 32 - buffered_);
    std::memcpy(buffer_ + buffered_, p, take);
    buffered_ += static_cast<std::uint32_t>(take);
    p += take;
    n -= take;
    if (buffered_ < 32) return;
    for (int i = 0; i < 4; ++i) v_[i] = Round(v_[i], Read64(buffer_ + 8 * i));
    buffered_ = 0;
  }
  std::uint64_t v0 = v_[0], v1 = v_[1], v2 = v_[2], v3 = v_[3];
  for (; n >= 32; p += 32, n -= 32) {
    v0 = Round(v0, Read64(p));
    v1 = Round(v1, Read64(p + 8));
    v2 = Round(v2, Read64(p + 16));
    v3 = Round(v3, Read64(p + 24));
  }
  v_[0] = v0, v_[1] = v1, v_[2] = v2, v_[3] = v3;
  std::memcpy(buffer_, p, n);
  buffered_ = static_cast<std::uint32_t>(n);
}

std::uint64_t Hash64::Digest() const {
  std::uint64_t h;
  if (total_ >= 32) {
    h = Rotl(v_[0], 1) + Rotl(v_[1], 7) + Rotl(v_[2], 12) + Rotl(v_[3], 18);
    for (int i = 0; i < 4; ++i) h = Merge(h, v_[i]);
  } else {
    h = seed_ + kP5;
  }
  h += total_;
  const std::uint8_t* p = buffer_;
  std::uint32_t n = buffered_;
  for (; n >= 8; p += 8, n -= 8) h = Rotl(h ^ Round(0, Read64(p)), 27) * kP1 + kP4;
  if (n >= 4) {
    std::uint32_t v;
    std::memcpy(&v, p, 4);
    h = Rotl(h ^ (std::uint64_t(v) * kP1), 23) * kP2 + kP3;
    p += 4;
    n -= 4;
  }
  for (; n > 0; ++p, --n) h = Rotl(h ^ (*p * kP5), 11) * kP1;
  h ^= h >> 33;
  h *= kP2;
  h ^= h >> 29;
  h *= kP3;
  h ^= h >> 32;
  return h;
}

}  // namespace backstep::core
