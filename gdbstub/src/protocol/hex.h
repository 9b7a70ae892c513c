// Hex helpers for the remote serial protocol.
//
// The protocol writes numbers as lowercase hex without `0x` or leading zeros
// ("4c6f30"), and byte strings (memory, registers, monitor text) as two hex
// digits per byte, in target byte order. Parsers take a string_view and return
// std::nullopt on anything that is not exactly what they expect: no partial
// parses, no sentinels.
//
// Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace backstep::gdbstub {

// 0..15 for [0-9a-fA-F]; nullopt otherwise.
std::optional<std::uint8_t> HexDigitValue(char c);

// Parses a whole string as an unsigned hex number. Rejects empty input,
// non-hex characters and values that do not fit in 64 bits (leading zeros are
// fine: "00000000000000001" parses).
std::optional<std::uint64_t> ParseHexU64(std::string_view text);

// Decodes two hex digits per byte ("0aff" -> {0x0a, 0xff}). Rejects an odd
// length or a non-hex character.
std::optional<std::vector<std::uint8_t>> DecodeHexBytes(std::string_view text);

// Like DecodeHexBytes but returns the bytes as a string (qRcmd command text).
std::optional<std::string> DecodeHexString(std::string_view text);

// Appends `value` as lowercase hex without leading zeros ("0" for zero).
void AppendHexNumber(std::string& out, std::uint64_t value);

// Appends two lowercase hex digits per byte.
void AppendHexBytes(std::string& out, std::span<const std::uint8_t> bytes);
void AppendHexBytes(std::string& out, std::string_view bytes);

// Appends exactly two lowercase hex digits.
void AppendHexByte(std::string& out, std::uint8_t byte);

// Convenience forms returning a new string.
std::string HexNumber(std::uint64_t value);
std::string HexBytes(std::string_view bytes);

}  // namespace backstep::gdbstub
