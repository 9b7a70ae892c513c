#include "backstep/core/number.h"

#include "gtest/gtest.h"

namespace backstep::core {
namespace {

TEST(ParseNumber, AcceptsDecimalAndHex) {
  EXPECT_EQ(ParseNumber("0"), 0u);
  EXPECT_EQ(ParseNumber("42"), 42u);
  EXPECT_EQ(ParseNumber("010"), 10u);  // decimal, never octal
  EXPECT_EQ(ParseNumber("0x1a2B"), 0x1a2bu);
  EXPECT_EQ(ParseNumber("0X10"), 16u);
  EXPECT_EQ(ParseNumber("0x0"), 0u);
  EXPECT_EQ(ParseNumber("18446744073709551615"), UINT64_MAX);
  EXPECT_EQ(ParseNumber("0xffffffffffffffff"), UINT64_MAX);
  EXPECT_EQ(ParseNumber("0x00000000000000000001"), 1u);  // leading zeros do not overflow
}

TEST(ParseNumber, RejectsJunkAndOverflow) {
  for (const char* text :
       {"", "0x", "0X", "x10", "-1", "+1", " 1", "1 ", "12a", "0x1g", "1.5", "0b101", "0x-1",
        "18446744073709551616", "0x10000000000000000", "99999999999999999999999"}) {
    EXPECT_EQ(ParseNumber(text), std::nullopt) << "'" << text << "'";
  }
  const char with_nul[] = {'1', '\0', '2'};
  EXPECT_EQ(ParseNumber(std::string_view(with_nul, 3)), std::nullopt);
}

}  // namespace
}  // namespace backstep::core
