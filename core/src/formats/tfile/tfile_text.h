// Small text helpers for tfile definition lines: gdb's unpack_varlen_hex,
// phex_nz, hex2bin and bin2hex, made strict (a helper returns nullopt where
// gdb would silently stop at the first bad character).
//
// Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

namespace backstep::core::tfile_text {

// 1..16 hex digits (either case), nothing else; nullopt otherwise.
std::optional<std::uint64_t> ParseHexU64(std::string_view s);
// Lower-case hex without prefix or leading zeros ("0" for 0): gdb's %x / phex_nz.
std::string Hex(std::uint64_t v);
// Two hex digits per byte; nullopt for an odd length or a non-hex digit.
std::optional<std::string> DecodeHexText(std::string_view hex);
// Two lower-case hex digits per byte.
std::string EncodeHexText(std::string_view text);
// Splits at the first `sep`: ("a", "b:c") for "a:b:c"; (s, "") without one.
inline std::pair<std::string_view, std::string_view> SplitFirst(std::string_view s, char sep) {
  const std::size_t at = s.find(sep);
  if (at == std::string_view::npos) return {s, {}};
  return {s.substr(0, at), s.substr(at + 1)};
}
// `text` with control and non-ASCII bytes escaped (\n, \x7f), at most `max`
// bytes of it shown: safe to print in a message.
std::string Printable(std::string_view text, std::size_t max = 40);

}  // namespace backstep::core::tfile_text
