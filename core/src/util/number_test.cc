#include "backstep/core/number.h"

#include "gtest/gtest.h"

namespace backstep::core {
namespace {

TEST(ParseNumber, ReadsDecimalAndHex) {
  EXPECT_EQ(ParseNumber("0"), 0u);
  EXPECT_EQ(ParseNumber("31"), 31u);
  EXPECT_EQ(ParseNumber("0x1f"), 0x1fu);
  EXPECT_EQ(ParseNumber("0X1F"), 0x1fu);
  EXPECT_EQ(ParseNumber("007"), 7u);
  EXPECT_EQ(ParseNumber("18446744073709551615"), UINT64_MAX);
  EXPECT_EQ(ParseNumber("0xffffffffffffffff"), UINT64_MAX);
}

TEST(ParseNumber, RefusesWhatIsNotOneWholeNumber) {
  for (std::string_view bad : {"", "0x", "x1", "-1", "+1", " 1", "1 ", "12a", "0x1g", "0x0x1", "1f",
                               "18446744073709551616", "0x10000000000000000", "1_000"}) {
    EXPECT_EQ(ParseNumber(bad), std::nullopt) << bad;
  }
}

}  // namespace
}  // namespace backstep::core
