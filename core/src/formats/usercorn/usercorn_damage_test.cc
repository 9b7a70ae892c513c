// Damaged files (leveldb log_test, ninja's Truncated): a small valid trace
// reloaded at every truncated length and with bytes flipped at every
// offset. The reader must never crash, hang or allocate without bound; a
// cut file ends cleanly after its last complete event; every flipped byte
// that a CRC covers is reported as Corruption naming the file and offset.
#include <gtest/gtest.h>

#include "formats/usercorn/usercorn_test_util.h"
#include "testing/usercorn_fixtures.h"

namespace backstep::core {
namespace {

constexpr char kName[] = "damaged.ucir";

struct Outcome {
  bool opened = false;
  std::vector<std::string> events;
  Status error;  // OK when the trace ended cleanly
};

Outcome ReadAll(std::vector<std::uint8_t> bytes) {
  Outcome out;
  auto r = usercorn_test::OpenBytes(std::move(bytes), kName);
  if (!r.ok()) {
    out.error = r.status();
    return out;
  }
  out.opened = true;
  UsercornReader& reader = **r;
  std::vector<std::uint8_t> mem(64), known(64);
  for (const MemoryRegion& region : reader.header().regions) {
    reader.ReadInitialMemory(region.start + region.size - 8, mem, known);
  }
  reader.ReadInitialMemory(~Address{0} - 10, mem, known);
  (void)reader.InitialRegisters();
  Event e;
  for (int i = 0; i < 10000; ++i) {
    auto more = reader.Next(&e);
    if (!more.ok()) {
      out.error = more.status();
      return out;
    }
    if (!*more) break;
    out.events.push_back(usercorn_test::Summary(e));
  }
  return out;
}

void ExpectNamed(const Status& s) {
  EXPECT_NE(s.message().find(std::string(kName) + ": "), std::string::npos) << s.ToString();
  EXPECT_NE(s.message().find("offset 0x"), std::string::npos) << s.ToString();
}

TEST(UsercornDamageTest, TruncatedAtEveryLength) {
  for (auto mode : {SnappyChunkMode::kCompressed, SnappyChunkMode::kUncompressed}) {
    const std::vector<std::uint8_t> full = testing::SmallUsercornTrace(mode, 37);
    const Outcome whole = ReadAll(full);
    ASSERT_TRUE(whole.error.ok()) << whole.error.ToString();
    ASSERT_EQ(whole.events.size(), 8u);
    std::size_t opened = 0;
    for (std::size_t n = 0; n < full.size(); ++n) {
      SCOPED_TRACE("length " + std::to_string(n));
      const Outcome o = ReadAll(std::vector<std::uint8_t>(full.begin(), full.begin() + n));
      if (n == 74 || n == 84) {  // the header alone, or with the stream identifier: empty
        EXPECT_TRUE(o.opened && o.error.ok() && o.events.empty()) << o.error.ToString();
        continue;
      }
      if (!o.opened) {  // the header, identifier or keyframe is cut
        EXPECT_EQ(o.error.code(), StatusCode::kCorruption) << o.error.ToString();
        ExpectNamed(o.error);
        EXPECT_EQ(opened, 0u) << "a shorter file opened";
        continue;
      }
      ++opened;
      // After the keyframe a cut ends the trace: no error, the events are
      // the full trace's, but for the last one (its tail, or leftover ops).
      ASSERT_TRUE(o.error.ok()) << o.error.ToString();
      ASSERT_LE(o.events.size(), whole.events.size());
      for (std::size_t i = 0; i + 1 < o.events.size(); ++i) {
        ASSERT_EQ(o.events[i], whole.events[i]) << i;
      }
    }
    EXPECT_GT(opened, full.size() / 2);
  }
}

// Offsets of bytes a chunk CRC covers (the CRC and the chunk's payload).
std::vector<bool> CrcCovered(const std::vector<std::uint8_t>& file) {
  std::vector<bool> covered(file.size(), false);
  for (std::size_t at = 74 + 10; at + 4 <= file.size();) {
    const std::size_t len = file[at + 1] | file[at + 2] << 8 | file[at + 3] << 16;
    if (file[at] <= 1) {
      for (std::size_t i = at + 4; i < at + 4 + len && i < file.size(); ++i) covered[i] = true;
    }
    at += 4 + len;
  }
  return covered;
}

TEST(UsercornDamageTest, FlippedBytesAreReportedNeverACrash) {
  for (auto mode : {SnappyChunkMode::kCompressed, SnappyChunkMode::kUncompressed}) {
    const std::vector<std::uint8_t> full = testing::SmallUsercornTrace(mode, 37);
    const Outcome whole = ReadAll(full);
    const std::vector<bool> covered = CrcCovered(full);
    for (std::size_t at = 0; at < full.size(); ++at) {
      for (const std::uint8_t mask : {0x01, 0x80, 0xff}) {
        SCOPED_TRACE("offset " + std::to_string(at) + " ^ " + std::to_string(mask));
        std::vector<std::uint8_t> bytes = full;
        bytes[at] ^= mask;
        const Outcome o = ReadAll(bytes);
        // A CRC catches every flipped byte of stored data; a flip in a
        // snappy block may also decode to the same bytes (a copy from
        // another run of zeros), which is no damage.
        if (covered[at] && !(o.error.ok() && o.events == whole.events)) {
          ASSERT_EQ(o.error.code(), StatusCode::kCorruption) << o.error.ToString();
          EXPECT_NE(o.error.message().find("snappy stream at offset"), std::string::npos)
              << o.error.ToString();
        }
        if (covered[at] && mode == SnappyChunkMode::kUncompressed) {
          EXPECT_TRUE(o.error.IsCorruption()) << o.error.ToString();
        }
        if (!o.error.ok()) {
          EXPECT_TRUE(o.error.IsCorruption() || o.error.IsUnsupported()) << o.error.ToString();
          ExpectNamed(o.error);
        }
        // Events before the damage are the full trace's.
        for (std::size_t i = 0; i + 1 < o.events.size() && i < whole.events.size(); ++i) {
          if (o.events[i] != whole.events[i]) {
            EXPECT_FALSE(covered[at]) << "event " << i << " changed by a CRC-covered byte";
            break;
          }
        }
      }
    }
  }
}

}  // namespace
}  // namespace backstep::core
