// Encoding of outgoing packets: framing, checksum and binary escaping.
//
// A reply payload goes on the wire as `$<payload>#<checksum>`, the checksum
// being the sum of the payload bytes modulo 256 in two lowercase hex digits:
// "OK" -> "$OK#9a", "" -> "$#00". The payload must not contain a raw `$`,
// `#`, `}` or `*` (the client would read them as framing, escape or
// run-length markers): binary data (qXfer chunks, `x` replies) goes through
// AppendEscapedBinary, everything else is hex or plain ASCII text.
//
// backstep never run-length encodes its replies: clients decode them, but
// our replies are short and O(1) to build, and RLE would only save bandwidth
// on loopback.
//
// Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>

namespace backstep::gdbstub {

// Sum of the bytes modulo 256.
std::uint8_t PacketChecksum(std::string_view payload);

// `$<payload>#<checksum>`.
std::string FramePacket(std::string_view payload);

// The escape byte and the XOR applied to an escaped byte.
inline constexpr char kEscapeByte = '}';
inline constexpr std::uint8_t kEscapeXor = 0x20;

// True for the bytes that must be escaped in binary data: `#`, `$`, `}`, `*`.
constexpr bool NeedsEscape(std::uint8_t byte) {
  return byte == '#' || byte == '$' || byte == '}' || byte == '*';
}

// Appends `data` with `#$}*` written as `}` followed by (byte ^ 0x20).
void AppendEscapedBinary(std::string& out, std::string_view data);
void AppendEscapedBinary(std::string& out, std::span<const std::uint8_t> data);

// How many bytes AppendEscapedBinary writes for `data`.
std::size_t EscapedSize(std::string_view data);

}  // namespace backstep::gdbstub
