// Number parsing for the command line, monitor commands and trace properties
// (core, the CLI, front ends, test tools): the one parser of "0x1a2b" / "42".
//
// Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace backstep::core {

// `text` as an unsigned 64-bit number: hexadecimal after "0x" or "0X",
// decimal otherwise. The whole text must be the number: nullopt for an empty
// text, a bare "0x", a sign, spaces, any other character, or a value above
// 2^64 - 1. Leading zeros are decimal ("010" is 10, never octal).
std::optional<std::uint64_t> ParseNumber(std::string_view text);

}  // namespace backstep::core
