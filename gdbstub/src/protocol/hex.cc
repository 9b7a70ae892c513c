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
  std::size_t n = sizeof buf;
  do {
    buf[--n] = kDigits[value & 0xf];
    value >>= 4;
  } while (value != 0);
  out.append(buf + n, sizeof buf - n);
}

void AppendHexByte(std::string& out, std::uint8_t byte) {
  const char pair[2] = {kDigits[byte >> 4], kDigits[byte & 0xf]};
  out.append(pair, 2);
}

// Memory and register replies are mostly hex: one resize and a plain loop
// (push_back per digit checked the capacity each time: a third of the stub's
// instructions per reverse step, callgrind, docs/benchmarks.md).
void AppendHexBytes(std::string& out, std::span<const std::uint8_t> bytes) {
  const std::size_t at = out.size();
  out.resize(at + 2 * bytes.size());
  char* p = out.data() + at;
  for (std::uint8_t b : bytes) {
    *p++ = kDigits[b >> 4];
    *p++ = kDigits[b & 0xf];
  }
}

void AppendHexBytes(std::string& out, std::string_view bytes) {
  AppendHexBytes(out, std::span<const std::uint8_t>(
                          reinterpret_cast<const std::uint8_t*>(bytes.data()), bytes.size()));
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
