// PacketFramer: incremental decoder of the bytes a debugger sends.
//
// The transport hands over whatever chunks the socket delivers; the framer
// turns them into events, in order:
//
//   Packet      `$<payload>#<checksum>` with a correct checksum; the payload
//               is decoded: `}x` -> x ^ 0x20, `c*n` -> c repeated 1 + (n - 29)
//               times (run-length encoding, "0* " -> "0000").
//   Ack, Nack   `+` / `-` outside a packet.
//   Interrupt   0x03 outside a packet (Ctrl-C).
//   ChecksumError  a complete packet whose checksum does not match, or whose
//               checksum is not two hex digits. The session answers `-` in
//               ack mode and drops it in no-ack mode.
//   Oversized   a packet longer than `max_payload` (the PacketSize we
//               advertise), raw or decoded. Its bytes are dropped as they
//               arrive: the framer never buffers more than `max_payload`.
//   Malformed   a packet with a correct checksum whose escapes or run-length
//               markers do not decode (`*` first, `}` or `*` last).
//
// Any other byte between packets is garbage and ignored. A `$` always starts
// a new packet, abandoning a partial one (as gdb and gdbserver do).
//
// The framer knows nothing of ack mode: in no-ack mode the session ignores
// Ack/Nack events (gdb still acks the OK of QStartNoAckMode with one `+`).
//
// Thread-safety: none; one framer per connection.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace backstep::gdbstub {

class PacketFramer {
 public:
  struct Packet {
    std::string payload;  // decoded; may hold any byte (binary X data)
    bool operator==(const Packet&) const = default;
  };
  struct Ack {
    bool operator==(const Ack&) const = default;
  };
  struct Nack {
    bool operator==(const Nack&) const = default;
  };
  struct Interrupt {
    bool operator==(const Interrupt&) const = default;
  };
  struct ChecksumError {
    bool operator==(const ChecksumError&) const = default;
  };
  struct Oversized {
    bool operator==(const Oversized&) const = default;
  };
  struct Malformed {
    bool operator==(const Malformed&) const = default;
  };
  using Event = std::variant<Packet, Ack, Nack, Interrupt, ChecksumError, Oversized, Malformed>;

  // REQUIRES: max_payload > 0.
  explicit PacketFramer(std::size_t max_payload);

  // Consumes `bytes` and returns the events they complete, in order. A packet
  // split across calls is reported by the call that delivers its last byte.
  std::vector<Event> Feed(std::span<const std::uint8_t> bytes);

  // True while a packet has started but not ended.
  bool in_packet() const { return state_ != State::kIdle; }

 private:
  enum class State : unsigned char { kIdle, kPayload, kChecksumHigh, kChecksumLow };

  std::optional<Event> Step(std::uint8_t byte);
  void StartPacket();
  Event FinishPacket(std::uint8_t received_checksum);

  std::size_t max_payload_;
  State state_ = State::kIdle;
  std::string raw_;         // payload bytes as received, at most max_payload_
  bool oversized_ = false;  // raw_ was dropped; wait for the end of the packet
  std::uint8_t checksum_ = 0;
  std::uint8_t checksum_high_ = 0;
};

// Decodes `}` escapes and `*` run-length markers of a received payload.
// Fails with kMalformed on a bad encoding (`*` first, `}` or `*` last, a
// repeat count byte outside ' '..'~'), with kTooLong when the decoded payload
// would exceed `max_size` bytes.
enum class PayloadError : unsigned char { kMalformed, kTooLong };
std::variant<std::string, PayloadError> DecodePayload(std::string_view raw, std::size_t max_size);

}  // namespace backstep::gdbstub
