#include "protocol/packet_framer.h"

#include <cassert>

#include "protocol/hex.h"
#include "protocol/response_writer.h"

namespace backstep::gdbstub {
namespace {

constexpr std::uint8_t kInterruptByte = 0x03;
// Run-length encoding: `c*n` repeats c (n - kRepeatBias) more times; gdb only
// emits printable count bytes, so a count below ' ' is malformed.
constexpr std::uint8_t kRepeatBias = 29;
constexpr std::uint8_t kFirstRepeatByte = ' ';
constexpr std::uint8_t kLastRepeatByte = '~';

}  // namespace

std::variant<std::string, PayloadError> DecodePayload(std::string_view raw, std::size_t max_size) {
  std::string out;
  out.reserve(raw.size() < max_size ? raw.size() : max_size);
  for (std::size_t i = 0; i < raw.size(); ++i) {
    char c = raw[i];
    if (c == kEscapeByte) {
      if (++i == raw.size()) return PayloadError::kMalformed;
      c = static_cast<char>(static_cast<std::uint8_t>(raw[i]) ^ kEscapeXor);
    } else if (c == '*') {
      if (out.empty() || ++i == raw.size()) return PayloadError::kMalformed;
      auto count_byte = static_cast<std::uint8_t>(raw[i]);
      if (count_byte < kFirstRepeatByte || count_byte > kLastRepeatByte) {
        return PayloadError::kMalformed;
      }
      std::size_t repeat = count_byte - kRepeatBias;
      if (out.size() + repeat > max_size) return PayloadError::kTooLong;
      out.append(repeat, out.back());
      continue;
    }
    if (out.size() == max_size) return PayloadError::kTooLong;
    out.push_back(c);
  }
  return out;
}

PacketFramer::PacketFramer(std::size_t max_payload) : max_payload_(max_payload) {
  assert(max_payload > 0);
}

std::vector<PacketFramer::Event> PacketFramer::Feed(std::span<const std::uint8_t> bytes) {
  std::vector<Event> events;
  for (std::uint8_t byte : bytes) {
    if (auto event = Step(byte)) events.push_back(std::move(*event));
  }
  return events;
}

void PacketFramer::StartPacket() {
  state_ = State::kPayload;
  raw_.clear();
  oversized_ = false;
  checksum_ = 0;
}

std::optional<PacketFramer::Event> PacketFramer::Step(std::uint8_t byte) {
  switch (state_) {
    case State::kIdle:
      if (byte == '$') {
        StartPacket();
      } else if (byte == '+') {
        return Ack{};
      } else if (byte == '-') {
        return Nack{};
      } else if (byte == kInterruptByte) {
        return Interrupt{};
      }  // anything else is line noise between packets
      return std::nullopt;
    case State::kPayload:
      if (byte == '$') {
        StartPacket();  // a new packet abandons the partial one
      } else if (byte == '#') {
        state_ = State::kChecksumHigh;
      } else {
        checksum_ = static_cast<std::uint8_t>(checksum_ + byte);
        if (oversized_) return std::nullopt;
        if (raw_.size() == max_payload_) {
          oversized_ = true;
          std::string().swap(raw_);  // give the memory back right away
          return std::nullopt;
        }
        raw_.push_back(static_cast<char>(byte));
      }
      return std::nullopt;
    case State::kChecksumHigh:
    case State::kChecksumLow: {
      auto digit = HexDigitValue(static_cast<char>(byte));
      if (!digit) {
        state_ = State::kIdle;
        bool oversized = oversized_;
        if (byte == '$') StartPacket();
        if (oversized) return Oversized{};
        return ChecksumError{};
      }
      if (state_ == State::kChecksumHigh) {
        checksum_high_ = *digit;
        state_ = State::kChecksumLow;
        return std::nullopt;
      }
      state_ = State::kIdle;
      return FinishPacket(static_cast<std::uint8_t>((checksum_high_ << 4) | *digit));
    }
  }
  return std::nullopt;
}

PacketFramer::Event PacketFramer::FinishPacket(std::uint8_t received_checksum) {
  // NOTE: an oversized packet is reported as such even when its checksum is
  // wrong too: retransmitting it would not help either way.
  if (oversized_) return Oversized{};
  if (received_checksum != checksum_) return ChecksumError{};
  auto decoded = DecodePayload(raw_, max_payload_);
  if (auto* error = std::get_if<PayloadError>(&decoded)) {
    if (*error == PayloadError::kTooLong) return Oversized{};
    return Malformed{};
  }
  return Packet{std::move(std::get<std::string>(decoded))};
}

}  // namespace backstep::gdbstub
