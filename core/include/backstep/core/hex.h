// Hex formatting for messages and the command line (core, the CLI, front
// ends).
//
// Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <span>
#include <string>

namespace backstep::core {

// "0x1a2b" (lower case, no padding).
std::string HexU64(std::uint64_t v);
// "0x00001a2b" padded to `digits`.
std::string HexPadded(std::uint64_t v, int digits);
// "de ad be ef" style, no prefix, no separator when `sep` is 0.
std::string HexBytes(std::span<const std::uint8_t> bytes, char sep = 0);

}  // namespace backstep::core
