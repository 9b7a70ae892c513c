#include "session/packet_table.h"

#include <gtest/gtest.h>

#include <set>

namespace backstep::gdbstub {
namespace {

TEST(PacketTableTest, PrefixesAreUniqueAndNonEmpty) {
  std::set<std::string_view> seen;
  for (const Route& route : PacketRoutes()) {
    EXPECT_FALSE(route.prefix.empty());
    EXPECT_TRUE(seen.insert(route.prefix).second) << "duplicate " << route.prefix;
    EXPECT_NE(route.handler, nullptr);
  }
}

TEST(PacketTableTest, LongestPrefixWins) {
  const Route* route = FindRoute("qXfer:auxv:read::0,1000");
  ASSERT_NE(route, nullptr);
  EXPECT_EQ(route->prefix, "qXfer:auxv:read:");
  EXPECT_EQ(route->capability, Capability::kAuxv);
  EXPECT_EQ(FindRoute("vCont?")->prefix, "vCont?");
  EXPECT_EQ(FindRoute("vCont;c")->prefix, "vCont;");
  EXPECT_EQ(FindRoute("bc")->prefix, "bc");
  EXPECT_EQ(FindRoute("c")->prefix, "c");
  EXPECT_EQ(FindRoute("_M1000,rwx")->prefix, "_M");
  EXPECT_EQ(FindRoute("QTFrame:pc:0")->capability, Capability::kTraceFrames);
}

TEST(PacketTableTest, ExactRoutesDoNotMatchLongerPackets) {
  EXPECT_EQ(FindRoute("qC")->prefix, "qC");
  EXPECT_EQ(FindRoute("qCRC:0,1"), nullptr);
  EXPECT_EQ(FindRoute("kill"), nullptr);
  EXPECT_EQ(FindRoute("bcx"), nullptr);
  EXPECT_EQ(FindRoute("vCont"), nullptr);
  EXPECT_EQ(FindRoute(""), nullptr);
}

}  // namespace
}  // namespace backstep::gdbstub
