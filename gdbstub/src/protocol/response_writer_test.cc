#include "protocol/response_writer.h"

#include <gtest/gtest.h>

namespace backstep::gdbstub {
namespace {

TEST(ResponseWriterTest, FramesWithChecksum) {
  EXPECT_EQ(FramePacket("OK"), "$OK#9a");
  EXPECT_EQ(FramePacket("E01"), "$E01#a6");
  EXPECT_EQ(FramePacket(""), "$#00");
  EXPECT_EQ(FramePacket("QC1"), "$QC1#c5");
  EXPECT_EQ(FramePacket("vCont;c;C;s;S"), "$vCont;c;C;s;S#62");
}

TEST(ResponseWriterTest, ChecksumWrapsModulo256) {
  std::string payload(300, 'z');  // 300 * 0x7a = 0x8ef8
  EXPECT_EQ(PacketChecksum(payload), 0xf8);
}

TEST(ResponseWriterTest, EscapesExactlyTheFourSpecialBytes) {
  std::string out;
  AppendEscapedBinary(out, std::string_view("a#b$c}d*e\x03", 10));
  EXPECT_EQ(out, std::string("a}\x03"
                             "b}\x04"
                             "c}]d}\x0a"
                             "e\x03"));
  EXPECT_EQ(EscapedSize(std::string_view("a#b$c}d*e\x03", 10)), 14u);
}

TEST(ResponseWriterTest, EscapesBinaryBytes) {
  const std::uint8_t bytes[] = {0x00, 0x23, 0xff, 0x7d};
  std::string out;
  AppendEscapedBinary(out, bytes);
  EXPECT_EQ(out, std::string("\x00}\x03\xff}]", 6));
}

}  // namespace
}  // namespace backstep::gdbstub
