#include "protocol/hex.h"

namespace backstep::gdbstub {
namespace {

constexpr char kDigits[] = "0123456789abcdef";

template <class Out>
std::optional<Out> DecodePairs(std::string_view text) {
  if (text.size() % 2 != 0) return std::nullopt;
  Out out;
  out.reserve(text.size() / 2);
  for (std::size_t i = 0; i < text.size(); i += 2) {
    auto hi = HexDigitValue(text[i]);
    auto lo = HexDigitValue(text[i + 1]);
    if (!hi || !lo) return std::nullopt;
    out.push_back(static_cast<typename Out::value_type>((*hi << 4) | *lo));
  }
  return out;
}

}  // namespace

std::optional<std::uint8_t> HexDigitValue(char c) {
  if (c >= '0' && c <= '9') return static_cast<std::uint8_t>(c - '0');
  if (c >= 'a' && c <= 'f') return static_cast<std::uint8_t>(c - 'a' + 10);
  if (c >= 'A' && c <= 'F') return static_cast<std::uint8_t>(c - 'A' + 10);
  return std::nullopt;
}

std::optional<std::uint64_t> ParseHexU64(std::string_view text) {
  if (text.empty()) return std::nullopt;
  std::uint64_t value = 0;
  for (char c : text) {
    auto digit = HexDigitValue(c);
    if (!digit) return std::nullopt;
    if (value >> 60 != 0) return std::nullopt;  // the next shift would overflow
    value = (value << 4) | *digit;
  }
  return value;
}

std::optional<std::vector<std::uint8_t>> DecodeHexBytes(std::string_view text) {
  return DecodePairs<std::vector<std::uint8_t>>(text);
}

std::optional<std::string> DecodeHexString(std::string_view text) {
  return DecodePairs<std::string>(text);
}

void AppendHexNumber(std::string& out, std::uint64_t value) {
  char buf[16];
  int n = 0;
  do {
    buf[n++] = kDigits[value & 0xf];
    value >>= 4;
  } while (value != 0);
  while (n > 0) out.push_back(buf[--n]);
}

void AppendHexByte(std::string& out, std::uint8_t byte) {
  out.push_back(kDigits[byte >> 4]);
  out.push_back(kDigits[byte & 0xf]);
}

void AppendHexBytes(std::string& out, std::span<const std::uint8_t> bytes) {
  out.reserve(out.size() + 2 * bytes.size());
  for (std::uint8_t b : bytes) AppendHexByte(out, b);
}

void AppendHexBytes(std::string& out, std::string_view bytes) {
  out.reserve(out.size() + 2 * bytes.size());
  for (char c : bytes) AppendHexByte(out, static_cast<std::uint8_t>(c));
}

std::string HexNumber(std::uint64_t value) {
  std::string out;
  AppendHexNumber(out, value);
  return out;
}

std::string HexBytes(std::string_view bytes) {
  std::string out;
  AppendHexBytes(out, bytes);
  return out;
}

}  // namespace backstep::gdbstub
