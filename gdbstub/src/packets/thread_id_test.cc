#include "packets/thread_id.h"

#include <gtest/gtest.h>

namespace backstep::gdbstub {
namespace {

TEST(ThreadIdTest, ParsesPlainIds) {
  EXPECT_EQ(ParseThreadSpec("1"), (ThreadSpec{std::nullopt, WireId::Of(1)}));
  EXPECT_EQ(ParseThreadSpec("1a"), (ThreadSpec{std::nullopt, WireId::Of(0x1a)}));
  EXPECT_EQ(ParseThreadSpec("0"), (ThreadSpec{std::nullopt, WireId::Any()}));
  EXPECT_EQ(ParseThreadSpec("-1"), (ThreadSpec{std::nullopt, WireId::All()}));
}

TEST(ThreadIdTest, ParsesMultiprocessIds) {
  EXPECT_EQ(ParseThreadSpec("p1.1"), (ThreadSpec{WireId::Of(1), WireId::Of(1)}));
  EXPECT_EQ(ParseThreadSpec("p1.-1"), (ThreadSpec{WireId::Of(1), WireId::All()}));
  EXPECT_EQ(ParseThreadSpec("p0.0"), (ThreadSpec{WireId::Any(), WireId::Any()}));
  EXPECT_EQ(ParseThreadSpec("p-1.-1"), (ThreadSpec{WireId::All(), WireId::All()}));
  EXPECT_EQ(ParseThreadSpec("p2a"), (ThreadSpec{WireId::Of(0x2a), WireId::All()}));
}

TEST(ThreadIdTest, RejectsMalformedIds) {
  for (std::string_view bad : {"", "p", "p.1", "p1.", "-2", "p1.x", "1.1", "q1", "-", "p1.1.1"}) {
    EXPECT_EQ(ParseThreadSpec(bad), std::nullopt) << bad;
  }
}

TEST(ThreadIdTest, SplitsThreadSuffix) {
  auto split = SplitThreadSuffix("10;thread:p1.2;");
  ASSERT_TRUE(split);
  EXPECT_EQ(split->body, "10");
  EXPECT_EQ(split->thread, (ThreadSpec{WireId::Of(1), WireId::Of(2)}));
  split = SplitThreadSuffix(";thread:3");
  ASSERT_TRUE(split);
  EXPECT_EQ(split->body, "");
  EXPECT_EQ(split->thread, (ThreadSpec{std::nullopt, WireId::Of(3)}));
  split = SplitThreadSuffix("10");
  ASSERT_TRUE(split);
  EXPECT_EQ(split->body, "10");
  EXPECT_EQ(split->thread, std::nullopt);
  EXPECT_EQ(SplitThreadSuffix("10;thread:zz;"), std::nullopt);
}

TEST(ThreadIdTest, FormatsInTheNegotiatedForm) {
  std::string out;
  AppendThreadId(out, 1, core::ThreadId(0x1f), true);
  out += ',';
  AppendThreadId(out, 1, core::ThreadId(0x1f), false);
  EXPECT_EQ(out, "p1.1f,1f");
}

}  // namespace
}  // namespace backstep::gdbstub
