// Test helpers: drive a Session the way a debugger does and check framing.
#pragma once

#include <gtest/gtest.h>

#include <cstdio>
#include <string>
#include <string_view>
#include <vector>

#include "protocol/response_writer.h"
#include "session/session.h"

namespace backstep::gdbstub {

// "0100000000000000" for Le(1, 8): little-endian hex, written independently
// of the code under test.
inline std::string Le(std::uint64_t value, int size) {
  std::string out;
  for (int i = 0; i < size; ++i) {
    char buf[3];
    std::snprintf(buf, sizeof buf, "%02x", static_cast<unsigned>((value >> (8 * i)) & 0xff));
    out += buf;
  }
  return out;
}

inline std::string Hex(std::string_view text) {
  std::string out;
  for (unsigned char c : text) {
    char buf[3];
    std::snprintf(buf, sizeof buf, "%02x", c);
    out += buf;
  }
  return out;
}

class Wire {
 public:
  explicit Wire(Target& target, SessionOptions options = {}, ResumeRunner* runner = nullptr)
      : session(target, options, runner) {}

  // Raw bytes in, raw writes out.
  std::vector<std::string> Feed(std::string_view bytes) {
    return session.OnBytes(std::span<const std::uint8_t>(
        reinterpret_cast<const std::uint8_t*>(bytes.data()), bytes.size()));
  }

  // Sends `payload` as one packet. Checks the `+` (in ack mode) and the
  // framing of every packet sent back; returns their payloads.
  std::vector<std::string> AskAll(std::string_view payload) {
    bool acks = !session.no_ack_mode();
    std::vector<std::string> writes = Feed(FramePacket(payload));
    std::vector<std::string> payloads;
    std::size_t i = 0;
    if (acks) {
      EXPECT_TRUE(!writes.empty() && writes[0] == "+") << "no ack for " << payload;
      i = 1;
    }
    for (; i < writes.size(); ++i) {
      const std::string& w = writes[i];
      if (w.size() < 4 || w.front() != '$' || w[w.size() - 3] != '#') {
        ADD_FAILURE() << "not a packet: " << w;
        continue;
      }
      std::string body = w.substr(1, w.size() - 4);
      EXPECT_EQ(w, FramePacket(body)) << "bad checksum";
      payloads.push_back(body);
    }
    return payloads;
  }

  // Sends `payload`, expecting exactly one reply packet; returns its payload.
  std::string Ask(std::string_view payload) {
    std::vector<std::string> replies = AskAll(payload);
    EXPECT_EQ(replies.size(), 1u) << "for " << payload;
    return replies.empty() ? std::string("<none>") : replies.back();
  }

  Session session;
};

}  // namespace backstep::gdbstub
