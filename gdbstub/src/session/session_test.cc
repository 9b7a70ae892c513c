// Session framing behaviour: acks, no-ack mode, retransmission, bad input.
#include "session/session.h"

#include <gtest/gtest.h>

#include "session/session_test_util.h"
#include "testing/fake_target.h"

namespace backstep::gdbstub {
namespace {

using Writes = std::vector<std::string>;

TEST(SessionTest, AcksThenReplies) {
  FakeTarget target;
  Wire wire(target);
  EXPECT_EQ(wire.Feed("$qC#b4"), (Writes{"+", "$QC1#c5"}));
  EXPECT_EQ(wire.Feed("$qFooBar#aa"), (Writes{"+", "$#00"}));
}

TEST(SessionTest, NoAckModeStartsAfterTheOk) {
  FakeTarget target;
  Wire wire(target);
  EXPECT_EQ(wire.Feed("$QStartNoAckMode#b0"), (Writes{"+", "$OK#9a"}));
  EXPECT_TRUE(wire.session.no_ack_mode());
  EXPECT_EQ(wire.Feed("+"), Writes{});  // gdb acks the OK
  EXPECT_EQ(wire.Feed("$qC#b4"), (Writes{"$QC1#c5"}));
  EXPECT_EQ(wire.Feed("+++"), Writes{});  // stray acks are ignored
  EXPECT_EQ(wire.Feed("-"), Writes{});    // and so are nacks
}

TEST(SessionTest, NackResendsTheLastPacket) {
  FakeTarget target;
  Wire wire(target);
  EXPECT_EQ(wire.Feed("$qC#b4"), (Writes{"+", "$QC1#c5"}));
  EXPECT_EQ(wire.Feed("-"), (Writes{"$QC1#c5"}));
}

TEST(SessionTest, BadChecksumIsNackedInAckModeOnly) {
  FakeTarget target;
  Wire wire(target);
  EXPECT_EQ(wire.Feed("$qC#00"), (Writes{"-"}));
  EXPECT_EQ(wire.Feed("$qC#b4"), (Writes{"+", "$QC1#c5"}));  // the retransmission
  wire.Ask("QStartNoAckMode");
  EXPECT_EQ(wire.Feed("$qC#00"), Writes{});
}

TEST(SessionTest, MalformedAndOversizedPacketsGetErrors) {
  FakeTarget target;
  Wire wire(target, SessionOptions{.packet_size = 64});
  EXPECT_EQ(wire.Feed(FramePacket("*m")), (Writes{"+", "$E16#ac"}));
  EXPECT_EQ(wire.Feed("$" + std::string(100000, 'm') + "#00"), (Writes{"+", "$E01#a6"}));
  EXPECT_EQ(wire.Feed("$qC#b4"), (Writes{"+", "$QC1#c5"}));
}

TEST(SessionTest, GarbageAndIdleInterruptsAreIgnored) {
  FakeTarget target;
  Wire wire(target);
  EXPECT_EQ(wire.Feed("\r\nhello\x03"), Writes{});
  EXPECT_EQ(target.resume_count, 0);
}

TEST(SessionTest, ErrorStringsOnceEnabled) {
  FakeTarget target;
  Wire wire(target);
  EXPECT_EQ(wire.Ask("M400000,1:00"), "E01");
  EXPECT_EQ(wire.Ask("QEnableErrorStrings"), "OK");
  EXPECT_EQ(wire.Ask("M400000,1:00"), "E01;" + Hex("the recording is read-only"));
}

TEST(SessionTest, HugeMemoryReadIsCappedAtThePacketSize) {
  FakeTarget target;
  target.memory[0x10000] = std::vector<std::uint8_t>(1 << 20, 0xab);
  Wire wire(target, SessionOptions{.packet_size = 0x400});
  std::string reply = wire.Ask("m10000,ffffffffffffffff");
  EXPECT_EQ(reply.size(), 0x400u);  // 0x200 bytes, two hex digits each
  EXPECT_EQ(reply.substr(0, 4), "abab");
  // Nothing readable at 0: an error, not a huge allocation.
  EXPECT_EQ(wire.Ask("m0,ffffffffffffffff"), "E01");
  EXPECT_EQ(wire.Ask("mffffffffffffffff,ffffffffffffffff"), "E01");
}

TEST(SessionTest, SplitPacketsAreAnsweredWhenComplete) {
  FakeTarget target;
  Wire wire(target);
  std::string stream = "$qC#b4$?#3f";
  Writes all;
  for (char c : stream) {
    for (auto& w : wire.Feed(std::string_view(&c, 1))) all.push_back(w);
  }
  ASSERT_EQ(all.size(), 4u);
  EXPECT_EQ(all[1], "$QC1#c5");
  EXPECT_EQ(all[3].substr(0, 11), "$T05thread:");
}

TEST(SessionTest, FinishedAfterDetachOrKill) {
  for (std::string_view packet : {"D", "D;1", "vKill;1", "k"}) {
    FakeTarget target;
    Wire wire(target);
    EXPECT_FALSE(wire.session.finished());
    EXPECT_EQ(wire.Ask(packet), packet == "k" ? "X09" : "OK");
    EXPECT_TRUE(wire.session.finished()) << packet;
  }
}

}  // namespace
}  // namespace backstep::gdbstub
