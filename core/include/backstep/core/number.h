// Number parsing for commands a person types (monitor commands, the command
// line, front ends): the one 0x-or-decimal parser (hex formatting is in
// backstep/core/hex.h).
//
// Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace backstep::core {

// The whole of `text` as an unsigned 64-bit number: "0x1f" or "0X1F" (hex)
// or "31" (decimal). nullopt when `text` is empty, has a sign, spaces or any
// character that is not a digit of its base, is "0x" alone, or overflows.
std::optional<std::uint64_t> ParseNumber(std::string_view text);

}  // namespace backstep::core
