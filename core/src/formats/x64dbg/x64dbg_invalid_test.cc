// A table of invalid headers: each is refused at open with a clear message
// naming the file (and the offset for corrupt bytes).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "formats/x64dbg/x64dbg_reader.h"

namespace backstep::core {
namespace {

std::vector<std::uint8_t> File(std::string_view magic, std::uint32_t declared, std::string json) {
  std::vector<std::uint8_t> b(magic.begin(), magic.end());
  for (int i = 0; i < 4; ++i) b.push_back(static_cast<std::uint8_t>(declared >> (8 * i)));
  b.insert(b.end(), json.begin(), json.end());
  return b;
}
std::vector<std::uint8_t> File(std::string json) {
  return File("TRAC", static_cast<std::uint32_t>(json.size()), json);
}

TEST(X64dbgInvalidTest, HeadersAreRefusedClearly) {
  struct Case {
    std::string name;
    std::vector<std::uint8_t> bytes;
    StatusCode code;
    std::string message;
  };
  const std::string ok = R"("hashAlgorithm":"murmurhash","hash":"0x1","compression":"","path":"a")";
  const std::vector<Case> cases = {
      {"empty", {}, StatusCode::kCorruption, "offset 0x0: 0 bytes, too short"},
      {"short", {'T', 'R', 'A', 'C', 1}, StatusCode::kCorruption, "too short"},
      {"bad magic", File("TRAX", 2, "{}"), StatusCode::kCorruption, "magic is not \"TRAC\""},
      {"huge json size", File("TRAC", 0xffffffffu, "{}"), StatusCode::kCorruption,
       "offset 0x4: JSON header of 4294967295 bytes (x64dbg accepts at most 16384)"},
      {"just over the limit", File("TRAC", 16385, "{}"), StatusCode::kCorruption, "at most 16384"},
      {"json past the end", File("TRAC", 100, "{}"), StatusCode::kCorruption,
       "JSON header of 100 bytes, but the file ends at offset 0xa"},
      {"not json", File("{ver:1}"), StatusCode::kCorruption,
       "offset 0x8: the header is not valid JSON"},
      {"empty json", File(""), StatusCode::kCorruption, "not valid JSON"},
      {"array", File("[1,2]"), StatusCode::kCorruption, "is not an object"},
      {"no ver", File(R"({"arch":"x64"})"), StatusCode::kCorruption, "has no \"ver\""},
      {"ver string", File(R"({"ver":"1","arch":"x64"})"), StatusCode::kCorruption,
       "\"ver\" is not an integer"},
      {"ver 2", File(R"({"ver":2,"arch":"x64"})"), StatusCode::kUnsupported,
       "x64dbg trace version 2 (only version 1 exists)"},
      {"absurd ver", File(R"({"ver":-99999999999,"arch":"x64"})"), StatusCode::kUnsupported,
       "version -99999999999"},
      {"no arch", File(R"({"ver":1})"), StatusCode::kCorruption, "has no \"arch\""},
      {"arch arm", File(R"({"ver":1,"arch":"arm64"})"), StatusCode::kCorruption,
       "\"arch\" is \"arm64\" (x64dbg writes \"x64\" or \"x86\")"},
      {"arch number", File(R"({"ver":1,"arch":64})"), StatusCode::kCorruption, "\"arch\" is 64"},
      {"compressed", File(R"({"ver":1,"arch":"x64","compression":"lz4"})"),
       StatusCode::kUnsupported, "compression \"lz4\""},
      {"compression number", File(R"({"ver":1,"arch":"x64","compression":0})"),
       StatusCode::kCorruption, "\"compression\" is not a string"},
      {"first block type",
       [&] {
         auto b = File("{\"ver\":1,\"arch\":\"x64\"," + ok + "}");
         b.insert(b.end(), {7, 0, 0, 0x81});
         return b;
       }(),
       StatusCode::kCorruption, "block type 7 (only type 0"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    auto r = X64dbgReader::Open(MemorySource(c.bytes, "bad.trace64"));
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.status().code(), c.code) << r.status().ToString();
    EXPECT_NE(r.status().message().find("bad.trace64: "), std::string::npos)
        << r.status().ToString();
    EXPECT_NE(r.status().message().find(c.message), std::string::npos) << r.status().ToString();
  }
}

TEST(X64dbgInvalidTest, MinimalHeadersOpen) {
  // x64dbg's own header, and the minimum (no compression field): no blocks,
  // an empty trace with one thread whose registers are all unknown.
  for (std::string json : {std::string(R"({"ver":1,"arch":"x64","hashAlgorithm":"murmurhash",)"
                                       R"("hash":"0x1A2B","compression":"","path":"C:\\a.exe"})"),
                           std::string(R"({"arch":"x86","ver":1})")}) {
    auto r = X64dbgReader::Open(MemorySource(File(json), "ok.trace64"));
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    Event e;
    auto more = (*r)->Next(&e);
    ASSERT_TRUE(more.ok());
    EXPECT_FALSE(*more);
    ASSERT_EQ((*r)->InitialRegisters().size(), 1u);
    EXPECT_TRUE((*r)->ResumePoints().empty());
  }
  auto r = X64dbgReader::Open(MemorySource(
      File(
          R"({"ver":1,"arch":"x64","hashAlgorithm":"murmurhash","hash":"0x1A2B","compression":"","path":"C:\\a.exe"})"),
      "ok.trace64"));
  ASSERT_TRUE(r.ok());
  const auto& props = (*r)->header().properties;
  auto has = [&](std::string k, std::string v) {
    return std::find(props.begin(), props.end(), std::pair(k, v)) != props.end();
  };
  EXPECT_TRUE(has("debuggee", "C:\\a.exe"));
  EXPECT_TRUE(has("debuggee hash", "murmurhash 0x1A2B"));
  EXPECT_TRUE(has("x64dbg arch", "x64"));
}

}  // namespace
}  // namespace backstep::core
