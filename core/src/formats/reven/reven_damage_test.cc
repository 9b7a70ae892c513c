// Damaged files (leveldb log_test / ninja Truncated): a small valid trace
// reloaded at every truncated length and with bytes flipped at every offset.
// The reader must never crash, hang or allocate without bound; errors name
// the file and an offset.
#include <gtest/gtest.h>

#include "backstep/testing/reven_fixtures.h"
#include "backstep/testing/sweep.h"
#include "formats/reven/reven_reader.h"

namespace backstep::core {
namespace {

constexpr char kName[] = "damaged.bin";

struct Outcome {
  bool opened = false;
  std::vector<std::string> events;
  Status error;  // OK when every event decoded
};

Outcome ReadAll(std::vector<std::uint8_t> bytes) {
  Outcome out;
  auto r = RevenReader::Open(MemorySource(std::move(bytes), kName));
  if (!r.ok()) {
    out.error = r.status();
    return out;
  }
  out.opened = true;
  RevenReader& reader = **r;
  std::vector<std::uint8_t> mem(64), known(64);
  for (const MemoryRegion& region : reader.header().regions) {
    reader.ReadInitialMemory(region.start + region.size - 8, mem, known);
  }
  reader.ReadInitialMemory(~Address{0} - 10, mem, known);
  (void)reader.InitialRegisters();
  (void)reader.ResumePoints();
  Event e;
  for (int i = 0; i < 100000; ++i) {
    auto more = reader.Next(&e);
    if (!more.ok()) {
      out.error = more.status();
      return out;
    }
    if (!*more) break;
    out.events.push_back(testing::DescribeEvent(e));
  }
  return out;
}

void ExpectNamed(const Status& s) {
  EXPECT_NE(s.message().find(std::string(kName) + ": "), std::string::npos) << s.ToString();
  EXPECT_NE(s.message().find("offset 0x"), std::string::npos) << s.ToString();
}

TEST(RevenDamageTest, TruncatedAtEveryLengthWithEventCount) {
  const std::vector<std::uint8_t> full = testing::SmallRevenTrace();
  const Outcome whole = ReadAll(full);
  ASSERT_TRUE(whole.error.ok()) << whole.error.ToString();
  ASSERT_EQ(whole.events.size(), 9u);
  for (std::size_t n = 0; n < full.size(); ++n) {
    SCOPED_TRACE("length " + std::to_string(n));
    const Outcome o = ReadAll(std::vector<std::uint8_t>(full.begin(), full.begin() + n));
    // event_count says 9: any cut is an error, at open or at the cut event.
    ASSERT_FALSE(o.error.ok());
    EXPECT_EQ(o.error.code(), StatusCode::kCorruption) << o.error.ToString();
    ExpectNamed(o.error);
    if (o.opened) {
      EXPECT_NE(o.error.message().find("event " + std::to_string(o.events.size())),
                std::string::npos)
          << o.error.ToString();
      EXPECT_LT(o.events.size(), 9u);
      for (std::size_t i = 0; i < o.events.size(); ++i) EXPECT_EQ(o.events[i], whole.events[i]);
    }
  }
}

TEST(RevenDamageTest, TruncatedAtEveryLengthWithoutEventCount) {
  const std::vector<std::uint8_t> full = testing::SmallRevenTrace(/*patch_event_count=*/false);
  const Outcome whole = ReadAll(full);
  ASSERT_TRUE(whole.error.ok()) << whole.error.ToString();
  ASSERT_EQ(whole.events.size(), 9u);
  std::size_t opened = 0;
  for (std::size_t n = 0; n < full.size(); ++n) {
    SCOPED_TRACE("length " + std::to_string(n));
    const Outcome o = ReadAll(std::vector<std::uint8_t>(full.begin(), full.begin() + n));
    if (!o.opened) {
      ExpectNamed(o.error);
      continue;
    }
    // A producer that died: a clean, shorter trace, a prefix of the whole.
    ++opened;
    ASSERT_TRUE(o.error.ok()) << o.error.ToString();
    ASSERT_LE(o.events.size(), whole.events.size());
    for (std::size_t i = 0; i < o.events.size(); ++i) EXPECT_EQ(o.events[i], whole.events[i]);
  }
  EXPECT_GT(opened, 100u);  // every cut inside the events section opens
}

TEST(RevenDamageTest, FlippedBytesNeverCrash) {
  for (bool patched : {true, false}) {
    const std::vector<std::uint8_t> full = testing::SmallRevenTrace(patched);
    for (std::size_t at = 0; at < full.size(); at += testing::kSweepStride) {
      for (std::uint8_t mask : {0xff, 0x01, 0x80, 0x10}) {
        std::vector<std::uint8_t> bytes = full;
        bytes[at] ^= mask;
        const Outcome o = ReadAll(std::move(bytes));
        if (!o.error.ok()) {
          SCOPED_TRACE("offset " + std::to_string(at));
          EXPECT_NE(o.error.message().find(std::string(kName) + ": "), std::string::npos)
              << o.error.ToString();
        }
      }
    }
  }
}

}  // namespace
}  // namespace backstep::core
