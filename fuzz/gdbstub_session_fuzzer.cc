// Fuzzes the stub's input path: arbitrary bytes, delivered in arbitrary
// chunks, go through PacketFramer and Session against FakeTarget.
//
// Checks that nothing crashes or leaks, and that every write is a `+`, a `-`
// or a well-formed packet whose size stays bounded by the PacketSize (no
// request can make the stub build an unbounded reply).
//
// Input layout: byte 0 picks the chunk size (1..16 bytes), byte 1 switches
// target capabilities off (one bit each); the rest is the byte stream.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <span>
#include <string>

#include "protocol/response_writer.h"
#include "session/session.h"
#include "testing/fake_target.h"

namespace {

using backstep::gdbstub::FakeTarget;
using backstep::gdbstub::FramePacket;
using backstep::gdbstub::Session;
using backstep::gdbstub::SessionOptions;

constexpr std::size_t kPacketSize = 0x400;

void CheckWrite(const std::string& w) {
  if (w == "+" || w == "-") return;
  if (w.size() < 4 || w.front() != '$' || w[w.size() - 3] != '#') std::abort();
  std::string_view payload(w.data() + 1, w.size() - 4);
  if (FramePacket(payload) != w) std::abort();
  // The largest replies: `m` hex (PacketSize), qXfer chunks, O packets; small
  // fixed-size ones (g, stop replies) stay well below 2x.
  if (payload.size() > 2 * kPacketSize) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 2) return 0;
  std::size_t chunk = 1 + data[0] % 16;
  std::uint8_t off = data[1];
  FakeTarget target;
  target.caps.reverse = !(off & 1);
  target.caps.breakpoints = !(off & 2);
  target.caps.watchpoints = !(off & 4);
  target.caps.read_watchpoints = (off & 8) != 0;
  target.caps.trace_frames = !(off & 16);
  target.caps.monitor = !(off & 32);
  target.caps.memory_map = !(off & 64);
  target.caps.auxv = !(off & 128);
  Session session(target, SessionOptions{.packet_size = kPacketSize});
  std::span<const std::uint8_t> rest(data + 2, size - 2);
  while (!rest.empty()) {
    std::size_t n = rest.size() < chunk ? rest.size() : chunk;
    for (const std::string& w : session.OnBytes(rest.first(n))) CheckWrite(w);
    rest = rest.subspan(n);
  }
  return 0;
}
