// A table of invalid BAP headers, meta frames and TOCs: each must fail to
// open with a clear one-line error naming the file and the offset (or be
// opened as documented, for the cut-file and missing-TOC cases).
#include <gtest/gtest.h>

#include <functional>

#include "formats/bap/bap_test_util.h"
#include "testing/bap_fixtures.h"

namespace backstep::core {
namespace {

void PutU64(std::vector<std::uint8_t>& b, std::size_t at, std::uint64_t v) {
  for (int i = 0; i < 8; ++i) b[at + i] = static_cast<std::uint8_t>(v >> (8 * i));
}
std::uint64_t GetU64(const std::vector<std::uint8_t>& b, std::size_t at) {
  std::uint64_t v = 0;
  for (int i = 0; i < 8; ++i) v |= std::uint64_t{b[at + i]} << (8 * i);
  return v;
}

struct Case {
  std::string name;
  std::function<void(std::vector<std::uint8_t>&)> damage;
  StatusCode code;
  std::string message;  // expected after "bad.frames: "
};

TEST(BapInvalidTest, HeadersMetaFramesAndTocs) {
  const std::vector<Case> cases = {
      {"empty", [](auto& b) { b.clear(); }, StatusCode::kCorruption,
       "header at offset 0x0: file holds 0 bytes, a BAP frames header needs 48"},
      {"short header", [](auto& b) { b.resize(47); }, StatusCode::kCorruption,
       "header at offset 0x0: file holds 47 bytes"},
      {"magic", [](auto& b) { b[0] ^= 1; }, StatusCode::kCorruption,
       "header at offset 0x0: magic 0x677c28828aaf6024 is not BAP's 0x677c28828aaf6025"},
      {"version 0", [](auto& b) { PutU64(b, 8, 0); }, StatusCode::kUnsupported,
       "header at offset 0x8: BAP frames version 0 (backstep reads 1 to 3)"},
      {"version 4", [](auto& b) { PutU64(b, 8, 4); }, StatusCode::kUnsupported,
       "BAP frames version 4"},
      {"arch arm", [](auto& b) { PutU64(b, 16, 35); }, StatusCode::kUnsupported,
       "header at offset 0x10: not supported yet: arm (frame_architecture 35)"},
      {"arch unknown", [](auto& b) { PutU64(b, 16, 0); }, StatusCode::kUnsupported,
       "not supported yet: unknown"},
      {"machine i8086", [](auto& b) { PutU64(b, 24, 2); }, StatusCode::kUnsupported,
       "not supported yet: i386 machine 2 (i8086)"},
      {"meta size cut", [](auto& b) { b.resize(52); }, StatusCode::kCorruption,
       "header at offset 0x30: the file ends before the meta frame's size"},
      {"meta size huge", [](auto& b) { PutU64(b, 48, ~std::uint64_t{0}); }, StatusCode::kCorruption,
       "header at offset 0x30: meta frame of 18446744073709551615 bytes"},
      {"meta garbage", [](auto& b) { b[56] = 0xff; }, StatusCode::kCorruption,
       "is not a valid meta_frame protobuf message"},
      {"meta missing field",
       [](auto& b) {
         // A meta frame of 0 bytes: every required field is missing.
         const std::uint64_t size = GetU64(b, 48);
         b.erase(b.begin() + 56, b.begin() + 56 + static_cast<std::ptrdiff_t>(size));
         PutU64(b, 48, 0);
         PutU64(b, 40, 0);
       },
       StatusCode::kCorruption,
       "header at offset 0x38: the meta frame (0 bytes) misses required fields: tracer, target"},
      {"toc before frames", [](auto& b) { PutU64(b, 40, 16); }, StatusCode::kCorruption,
       "header at offset 0x28: TOC offset 0x10 lies before the frames"},
      {"toc m 0", [](auto& b) { PutU64(b, GetU64(b, 40), 0); }, StatusCode::kCorruption,
       ": 0 frames per entry"},
      {"toc ragged", [](auto& b) { b.push_back(0); }, StatusCode::kCorruption,
       "bytes of entries, not a whole number of u64 offsets"},
      {"toc entry past T", [](auto& b) { PutU64(b, GetU64(b, 40) + 8, GetU64(b, 40) + 1); },
       StatusCode::kCorruption, "is not a frame offset in ["},
      {"toc entries decreasing",
       [](auto& b) { PutU64(b, GetU64(b, 40) + 16, GetU64(b, GetU64(b, 40) + 8) - 1); },
       StatusCode::kCorruption, "is not a frame offset in ["},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    std::vector<std::uint8_t> bytes = testing::SmallBapTrace();
    c.damage(bytes);
    auto r = bap_test::OpenBytes(bytes, "bad.frames");
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.status().code(), c.code) << r.status().ToString();
    EXPECT_NE(r.status().message().find("bad.frames: "), std::string::npos)
        << r.status().ToString();
    EXPECT_NE(r.status().message().find(c.message), std::string::npos) << r.status().ToString();
    EXPECT_EQ(r.status().message().find('\n'), std::string::npos);
  }
}

// Frames that are bad once the file is open: Next() reports them with the
// frame's number and offset, after the good frames before them.
TEST(BapInvalidTest, BadFramesAreReportedWhereTheyAre) {
  struct FrameCase {
    std::string name;
    std::function<void(std::vector<testing::bp::frame>&)> edit;
    std::string message;
  };
  const std::vector<FrameCase> cases = {
      {"no kind", [](auto& f) { f[2].Clear(); }, "frame 2 at offset 0x"},
      {"two kinds", [](auto& f) { f[2].mutable_key_frame()->mutable_tagged_value_lists(); },
       "sets 2 frame kinds (exactly one is allowed)"},
      {"wrapping memory",
       [](auto& f) {
         *f[3].mutable_std_frame()->mutable_operand_post_list()->mutable_elem(0) =
             testing::BapMem(~std::uint64_t{0} - 2, "12345678", true);
       },
       "memory operand at 0xfffffffffffffffd of 8 bytes wraps around the address space"},
      {"thread id 2^64-1",
       [](auto& f) { f[3].mutable_std_frame()->set_thread_id(~std::uint64_t{0}); },
       "thread id 18446744073709551615"},
  };
  for (const FrameCase& c : cases) {
    SCOPED_TRACE(c.name);
    std::vector<testing::bp::frame> frames = testing::SmallBapFrames();
    c.edit(frames);
    auto r = bap_test::OpenBytes(testing::HandBapFile(frames), "bad.frames");
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    auto events = bap_test::ReadAll(**r);
    ASSERT_FALSE(events.empty());
    EXPECT_NE(events.back().find("bad.frames: frame "), std::string::npos) << events.back();
    EXPECT_NE(events.back().find(c.message), std::string::npos) << events.back();
  }
  // A frame whose bytes are not a protobuf message, and a length of 0.
  std::vector<std::uint8_t> bytes = testing::SmallBapTrace();
  const std::uint64_t first = 56 + GetU64(bytes, 48);
  bytes[first + 8] = 0xff;
  auto r = bap_test::OpenBytes(bytes, "bad.frames");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(
      bap_test::ReadAll(**r),
      std::vector<std::string>{"error: Corruption: bad.frames: frame 0 at offset " + HexU64(first) +
                               ": its " + std::to_string(GetU64(bytes, first)) +
                               " bytes are not a valid frame protobuf message"});
  bytes = testing::SmallBapTrace();
  PutU64(bytes, first, 0);
  r = bap_test::OpenBytes(bytes, "bad.frames");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(bap_test::ReadAll(**r),
            std::vector<std::string>{"error: Corruption: bad.frames: frame 0 at offset " +
                                     HexU64(first) + ": length 0"});
  // An absurd length is checked against the file, never allocated.
  PutU64(bytes, first, std::uint64_t{1} << 60);
  r = bap_test::OpenBytes(bytes, "bad.frames");
  ASSERT_TRUE(r.ok());
  const auto events = bap_test::ReadAll(**r);
  ASSERT_EQ(events.size(), 1u);
  EXPECT_NE(events[0].find("length 1152921504606846976, only "), std::string::npos) << events[0];
}

TEST(BapInvalidTest, CutFileWithTocPastTheEnd) {
  std::vector<std::uint8_t> bytes = testing::SmallBapTrace();
  const std::uint64_t toc = GetU64(bytes, 40);
  bytes.resize(toc - 3);  // the TOC and the last frame's last 3 bytes are gone
  auto r = bap_test::OpenBytes(bytes, "cut.frames");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  bool noted = false;
  for (const auto& [k, v] : (*r)->header().properties) {
    if (k == "toc" && v.find("past the end of the file") != std::string::npos) noted = true;
  }
  EXPECT_TRUE(noted);
  auto events = bap_test::ReadAll(**r);
  ASSERT_EQ(events.size(), 11u);
  EXPECT_NE(events.back().find("cut.frames: frame 10 at offset 0x"), std::string::npos)
      << events.back();
  EXPECT_NE(events.back().find(" bytes follow"), std::string::npos) << events.back();
}

}  // namespace
}  // namespace backstep::core
