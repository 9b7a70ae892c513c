#include "protocol/hex.h"

#include <gtest/gtest.h>

namespace backstep::gdbstub {
namespace {

TEST(RspHexTest, ParsesNumbers) {
  EXPECT_EQ(ParseHexU64("0"), 0u);
  EXPECT_EQ(ParseHexU64("4016b3"), 0x4016b3u);
  EXPECT_EQ(ParseHexU64("DEADbeef"), 0xdeadbeefu);
  EXPECT_EQ(ParseHexU64("ffffffffffffffff"), ~0ull);
  EXPECT_EQ(ParseHexU64("0000000000000000001"), 1u);  // leading zeros do not overflow
}

TEST(RspHexTest, RejectsBadNumbers) {
  EXPECT_EQ(ParseHexU64(""), std::nullopt);
  EXPECT_EQ(ParseHexU64("x1"), std::nullopt);
  EXPECT_EQ(ParseHexU64("1 "), std::nullopt);
  EXPECT_EQ(ParseHexU64("-1"), std::nullopt);
  EXPECT_EQ(ParseHexU64("10000000000000000"), std::nullopt);  // 2^64
}

TEST(RspHexTest, DecodesBytes) {
  EXPECT_EQ(DecodeHexBytes("00ff7f"), (std::vector<std::uint8_t>{0x00, 0xff, 0x7f}));
  EXPECT_EQ(DecodeHexString("676f746f2035"), "goto 5");
  EXPECT_EQ(DecodeHexString(""), "");
  EXPECT_EQ(DecodeHexBytes("abc"), std::nullopt);
  EXPECT_EQ(DecodeHexBytes("zz"), std::nullopt);
}

TEST(RspHexTest, FormatsNumbersWithoutLeadingZeros) {
  EXPECT_EQ(HexNumber(0), "0");
  EXPECT_EQ(HexNumber(0x4c6f30), "4c6f30");
  EXPECT_EQ(HexNumber(~0ull), "ffffffffffffffff");
}

TEST(RspHexTest, FormatsBytesInOrder) {
  std::string out;
  const std::uint8_t bytes[] = {0x8f, 0x16, 0x40, 0x00};
  AppendHexBytes(out, bytes);
  EXPECT_EQ(out, "8f164000");
  EXPECT_EQ(HexBytes("main"), "6d61696e");
}

}  // namespace
}  // namespace backstep::gdbstub
