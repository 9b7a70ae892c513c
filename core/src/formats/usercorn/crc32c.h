// CRC-32C (Castagnoli, reflected polynomial 0x82f63b78) and the "masked"
// form the Snappy framing format stores in every data chunk.
//
// Software slicing-by-8: about 1.5 GB/s, faster than snappy decompresses, so
// checking every chunk costs little. Test vector: Crc32c("123456789") ==
// 0xe3069283.
//
// Thread-safety: pure functions (the tables are built once, thread-safely).
#pragma once

#include <cstdint>
#include <span>

namespace backstep::core {

// CRC-32C of `data`, continuing from `crc` (0 to start).
std::uint32_t Crc32c(std::span<const std::uint8_t> data, std::uint32_t crc = 0);

// Snappy framing's mask: ((c >> 15) | (c << 17)) + 0xa282ead8.
inline std::uint32_t MaskCrc32c(std::uint32_t c) { return ((c >> 15) | (c << 17)) + 0xa282ead8u; }

}  // namespace backstep::core
