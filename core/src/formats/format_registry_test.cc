#include "backstep/core/format_registry.h"

#include "gtest/gtest.h"

namespace backstep::core {
namespace {

TEST(FormatRegistry, KnowsReven) {
  const FormatInfo* reven = FindFormat("reven");
  ASSERT_NE(reven, nullptr);
  EXPECT_TRUE(reven->create_writer != nullptr);
  EXPECT_EQ(FindFormat("no-such-format"), nullptr);
}

TEST(FormatRegistry, CreatesWritersByName) {
  for (const FormatInfo& f : Formats()) {
    auto writer = CreateTraceWriter(f.name, ::testing::TempDir() + "/w");
    EXPECT_EQ(writer.ok(), static_cast<bool>(f.create_writer)) << f.name;
  }
  auto unknown = CreateTraceWriter("no-such-format", "/tmp/x");
  ASSERT_FALSE(unknown.ok());
  EXPECT_EQ(unknown.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(unknown.status().message().find("no-such-format"), std::string::npos);
  EXPECT_NE(unknown.status().message().find("reven"), std::string::npos);
}

TEST(FormatRegistry, UnknownBytesGiveAClearError) {
  auto r = OpenTraceSource(MemorySource({'E', 'L', 'F', 0, 1, 2, 3, 4, 5}, "mystery.dat"));
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(r.status().IsUnsupported());
  const std::string& m = r.status().message();
  EXPECT_NE(m.find("mystery.dat"), std::string::npos) << m;
  EXPECT_NE(m.find("unknown trace format"), std::string::npos) << m;
  EXPECT_NE(m.find("45 4c 46 00"), std::string::npos) << m;
  EXPECT_NE(m.find("reven"), std::string::npos) << m;
}

TEST(FormatRegistry, EmptyFileIsNamed) {
  auto r = OpenTraceSource(MemorySource({}, "empty.bin"));
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("empty.bin: empty file"), std::string::npos);
}

TEST(FormatRegistry, MissingFileIsAnIOError) {
  auto r = OpenTraceFile("/nonexistent/trace.bin");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kIOError);
  EXPECT_NE(r.status().message().find("/nonexistent/trace.bin"), std::string::npos);
}

}  // namespace
}  // namespace backstep::core
