#include "protocol/response_writer.h"

#include "protocol/hex.h"

namespace backstep::gdbstub {

std::uint8_t PacketChecksum(std::string_view payload) {
  std::uint8_t sum = 0;
  for (char c : payload) sum = static_cast<std::uint8_t>(sum + static_cast<std::uint8_t>(c));
  return sum;
}

std::string FramePacket(std::string_view payload) {
  std::string out;
  out.reserve(payload.size() + 4);
  out.push_back('$');
  out.append(payload);
  out.push_back('#');
  AppendHexByte(out, PacketChecksum(payload));
  return out;
}

void AppendEscapedBinary(std::string& out, std::string_view data) {
  for (char c : data) {
    auto byte = static_cast<std::uint8_t>(c);
    if (NeedsEscape(byte)) {
      out.push_back(kEscapeByte);
      out.push_back(static_cast<char>(byte ^ kEscapeXor));
    } else {
      out.push_back(c);
    }
  }
}

void AppendEscapedBinary(std::string& out, std::span<const std::uint8_t> data) {
  AppendEscapedBinary(out,
                      std::string_view(reinterpret_cast<const char*>(data.data()), data.size()));
}

std::size_t EscapedSize(std::string_view data) {
  std::size_t n = data.size();
  for (char c : data) n += NeedsEscape(static_cast<std::uint8_t>(c)) ? 1 : 0;
  return n;
}

}  // namespace backstep::gdbstub
