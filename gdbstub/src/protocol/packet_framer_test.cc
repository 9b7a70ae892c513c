#include "protocol/packet_framer.h"

#include <gtest/gtest.h>

#include "protocol/response_writer.h"

namespace backstep::gdbstub {
namespace {

using Framer = PacketFramer;
using Events = std::vector<Framer::Event>;

std::span<const std::uint8_t> Bytes(std::string_view s) {
  return {reinterpret_cast<const std::uint8_t*>(s.data()), s.size()};
}

Events FeedAll(Framer& framer, std::string_view s) { return framer.Feed(Bytes(s)); }

Events FeedByteByByte(Framer& framer, std::string_view s) {
  Events all;
  for (std::size_t i = 0; i < s.size(); ++i) {
    for (auto& e : framer.Feed(Bytes(s.substr(i, 1)))) all.push_back(std::move(e));
  }
  return all;
}

Framer::Event Pkt(std::string payload) { return Framer::Packet{std::move(payload)}; }

TEST(PacketFramerTest, DecodesOnePacket) {
  Framer framer(0x4000);
  EXPECT_EQ(FeedAll(framer, "$qC#b4"), Events{Pkt("qC")});
  EXPECT_FALSE(framer.in_packet());
}

TEST(PacketFramerTest, ReportsAcksNacksAndInterrupts) {
  Framer framer(0x4000);
  EXPECT_EQ(FeedAll(framer, "+-\x03+"),
            (Events{Framer::Ack{}, Framer::Nack{}, Framer::Interrupt{}, Framer::Ack{}}));
}

TEST(PacketFramerTest, InterruptByteInsideAPacketIsData) {
  Framer framer(0x4000);
  std::string wire = FramePacket(std::string_view("a\x03", 2));
  EXPECT_EQ(FeedAll(framer, wire), Events{Pkt(std::string("a\x03", 2))});
}

TEST(PacketFramerTest, EverySplitPointGivesTheSameEvents) {
  std::string stream = "+" + FramePacket("QStartNoAckMode") + "+\x03" +
                       FramePacket("qSupported:multiprocess+;swbreak+") + "garbage" +
                       FramePacket("m4016b3,40");
  Events expected = {Framer::Ack{},
                     Pkt("QStartNoAckMode"),
                     Framer::Ack{},
                     Framer::Interrupt{},
                     Pkt("qSupported:multiprocess+;swbreak+"),
                     Pkt("m4016b3,40")};
  for (std::size_t split = 0; split <= stream.size(); ++split) {
    Framer framer(0x4000);
    Events got = FeedAll(framer, std::string_view(stream).substr(0, split));
    for (auto& e : FeedAll(framer, std::string_view(stream).substr(split))) got.push_back(e);
    EXPECT_EQ(got, expected) << "split at " << split;
  }
  Framer framer(0x4000);
  EXPECT_EQ(FeedByteByByte(framer, stream), expected);
}

TEST(PacketFramerTest, BadChecksumIsReported) {
  Framer framer(0x4000);
  EXPECT_EQ(FeedAll(framer, "$qC#b5"), Events{Framer::ChecksumError{}});
  EXPECT_EQ(FeedAll(framer, "$qC#zz"), Events{Framer::ChecksumError{}});
  // The framer recovers for the next packet.
  EXPECT_EQ(FeedAll(framer, "$qC#b4"), Events{Pkt("qC")});
}

TEST(PacketFramerTest, ChecksumDigitsMayBeUpperCase) {
  Framer framer(0x4000);
  EXPECT_EQ(FeedAll(framer, "$qC#B4"), Events{Pkt("qC")});
}

TEST(PacketFramerTest, DollarRestartsAPacket) {
  Framer framer(0x4000);
  EXPECT_EQ(FeedAll(framer, "$m12$qC#b4"), Events{Pkt("qC")});
  // Also inside the checksum: the broken packet is reported, the new one kept.
  EXPECT_EQ(FeedAll(framer, "$qC#b$qC#b4"), (Events{Framer::ChecksumError{}, Pkt("qC")}));
}

TEST(PacketFramerTest, IgnoresGarbageBetweenPackets) {
  Framer framer(0x4000);
  EXPECT_EQ(FeedAll(framer, "hello\r\n#00$qC#b4 x"), Events{Pkt("qC")});
}

TEST(PacketFramerTest, DecodesRunLengthEncoding) {
  Framer framer(0x4000);
  // "0* " = '0' + 3 more: the checksum covers the encoded bytes.
  EXPECT_EQ(FeedAll(framer, FramePacket("0* ")), Events{Pkt("0000")});
  EXPECT_EQ(FeedAll(framer, FramePacket("ab*\"c")), Events{Pkt("abbbbbbc")});
  EXPECT_EQ(FeedAll(framer, FramePacket("x*~")), Events{Pkt(std::string(98, 'x'))});
}

TEST(PacketFramerTest, DecodesEscapes) {
  Framer framer(0x4000);
  EXPECT_EQ(FeedAll(framer, FramePacket("X0,4:}\x03}\x04}]}\x0a")), Events{Pkt("X0,4:#$}*")});
  // An escaped byte can be repeated.
  EXPECT_EQ(FeedAll(framer, FramePacket("}\x03* ")), Events{Pkt("####")});
}

TEST(PacketFramerTest, MalformedEncodingsAreReported) {
  for (std::string_view payload : {"*a", "a}", "a*", "a*\x1f"}) {
    Framer framer(0x4000);
    EXPECT_EQ(FeedAll(framer, FramePacket(payload)), Events{Framer::Malformed{}}) << payload;
  }
}

TEST(PacketFramerTest, OversizedPacketIsDroppedWithoutBuffering) {
  Framer framer(16);
  std::string huge = "$" + std::string(1 << 20, 'm') + "#00";
  EXPECT_EQ(FeedAll(framer, huge), Events{Framer::Oversized{}});
  EXPECT_EQ(FeedAll(framer, "$qC#b4"), Events{Pkt("qC")});
}

TEST(PacketFramerTest, PacketOfExactlyMaxSizeIsAccepted) {
  Framer framer(16);
  std::string payload(16, 'a');
  EXPECT_EQ(FeedAll(framer, FramePacket(payload)), Events{Pkt(payload)});
  EXPECT_EQ(FeedAll(framer, FramePacket(payload + "a")), Events{Framer::Oversized{}});
}

TEST(PacketFramerTest, RunLengthCannotExpandPastMaxSize) {
  Framer framer(16);
  EXPECT_EQ(FeedAll(framer, FramePacket("a*~")), Events{Framer::Oversized{}});
}

TEST(PacketFramerTest, UnterminatedPacketYieldsNothing) {
  Framer framer(0x4000);
  EXPECT_TRUE(FeedAll(framer, "$qC#b").empty());
  EXPECT_TRUE(framer.in_packet());
  EXPECT_EQ(FeedAll(framer, "4"), Events{Pkt("qC")});
}

}  // namespace
}  // namespace backstep::gdbstub
