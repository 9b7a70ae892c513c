// Damaged files (leveldb log_test, ninja's Truncated): the small trace cut
// at every length and with bytes flipped at every offset. The reader must
// never crash, hang or allocate without bound (lengths are checked against
// the file first; ASan builds run this too). A cut file opens once its
// header and meta frame are whole and then yields the full trace's events
// up to the cut, ending with a Corruption naming the file and offset.
#include <gtest/gtest.h>

#include <algorithm>
#include <sstream>

#include "formats/bap/bap_test_util.h"
#include "testing/bap_fixtures.h"

namespace backstep::core {
namespace {

constexpr char kName[] = "damaged.frames";

struct Outcome {
  bool opened = false;
  std::vector<std::string> events;
  Status error;  // OK when the trace ended cleanly
};

Outcome ReadAll(std::vector<std::uint8_t> bytes) {
  Outcome out;
  auto r = bap_test::OpenBytes(std::move(bytes), kName);
  if (!r.ok()) {
    out.error = r.status();
    return out;
  }
  out.opened = true;
  BapReader& reader = **r;
  (void)reader.InitialRegisters();
  Event e;
  RegisterFile regs(X86_64());
  for (int i = 0; i < 10000; ++i) {
    auto more = reader.Next(&e);
    if (!more.ok()) {
      out.error = more.status();
      return out;
    }
    if (!*more) break;
    for (const RegisterWrite& w : e.registers) regs.Apply(w);
    out.events.push_back(bap_test::Summary(e));
  }
  return out;
}

void ExpectNamed(const Status& s) {
  EXPECT_NE(s.message().find(std::string(kName) + ": "), std::string::npos) << s.ToString();
  EXPECT_NE(s.message().find("offset 0x"), std::string::npos) << s.ToString();
}

// An event's description without its register writes ("name=value").
std::string WithoutRegisters(const std::string& described) {
  std::string out, token;
  std::istringstream in(described);
  while (in >> token) {
    const bool reg = token.find('=') != std::string::npos && token.rfind("R0x", 0) != 0 &&
                     token.rfind("W0x", 0) != 0;
    if (!reg) out += token + " ";
  }
  return out;
}

TEST(BapDamageTest, TruncatedAtEveryLength) {
  const std::vector<std::uint8_t> full = testing::SmallBapTrace();
  const Outcome whole = ReadAll(full);
  ASSERT_TRUE(whole.error.ok()) << whole.error.ToString();
  ASSERT_EQ(whole.events.size(), 11u);
  std::uint64_t meta_end = 56;
  for (int i = 0; i < 8; ++i) meta_end += std::uint64_t{full[48 + i]} << (8 * i);
  std::uint64_t toc = 0;
  for (int i = 0; i < 8; ++i) toc |= std::uint64_t{full[40 + i]} << (8 * i);
  std::vector<std::uint64_t> boundaries;  // where frames start (and the TOC)
  for (std::uint64_t at = meta_end; at <= toc;) {
    boundaries.push_back(at);
    std::uint64_t len = 0;
    for (int i = 0; i < 8 && at < toc; ++i) len |= std::uint64_t{full[at + i]} << (8 * i);
    at += 8 + len;
  }
  for (std::size_t n = 0; n < full.size(); ++n) {
    SCOPED_TRACE("length " + std::to_string(n));
    const Outcome o = ReadAll(std::vector<std::uint8_t>(full.begin(), full.begin() + n));
    if (n < meta_end) {  // the header or the meta frame is cut
      ASSERT_FALSE(o.opened);
      EXPECT_EQ(o.error.code(), StatusCode::kCorruption) << o.error.ToString();
      ExpectNamed(o.error);
      continue;
    }
    if (n >= toc + 8) {
      // The TOC is cut: ragged entries are Corruption at open.
      if (!o.error.ok()) ExpectNamed(o.error);
      continue;
    }
    ASSERT_TRUE(o.opened) << o.error.ToString();
    {
      // Every whole frame before the cut is the full trace's, but the last
      // instruction of each thread may lose the registers of its next one
      // (its pc and pre-list: that frame is gone).
      ASSERT_LE(o.events.size(), whole.events.size());
      for (std::size_t i = 0; i < o.events.size(); ++i) {
        EXPECT_EQ(WithoutRegisters(o.events[i]), WithoutRegisters(whole.events[i])) << i;
      }
      // A cut between frames ends the trace there (as a tracer that died
      // would leave it; n frames were read when only the TOC is cut); a cut
      // inside a frame is Corruption.
      const bool between =
          n >= toc || std::find(boundaries.begin(), boundaries.end(), n) != boundaries.end();
      if (between) {
        EXPECT_TRUE(o.error.ok()) << o.error.ToString();
      } else if (o.error.ok()) {
        ADD_FAILURE() << "a cut inside a frame ended without an error";
      } else {
        EXPECT_EQ(o.error.code(), StatusCode::kCorruption) << o.error.ToString();
        ExpectNamed(o.error);
      }
    }
  }
}

TEST(BapDamageTest, FlippedBytesAreReportedNeverACrash) {
  const std::vector<std::uint8_t> full = testing::SmallBapTrace();
  const Outcome whole = ReadAll(full);
  std::size_t errors = 0;
  for (std::size_t at = 0; at < full.size(); ++at) {
    for (const std::uint8_t mask : {0x01, 0x80, 0xff}) {
      SCOPED_TRACE("offset " + std::to_string(at) + " ^ " + std::to_string(mask));
      std::vector<std::uint8_t> bytes = full;
      bytes[at] ^= mask;
      const Outcome o = ReadAll(bytes);
      if (!o.error.ok()) {
        ++errors;
        EXPECT_TRUE(o.error.IsCorruption() || o.error.IsUnsupported()) << o.error.ToString();
        EXPECT_NE(o.error.message().find(std::string(kName) + ": "), std::string::npos)
            << o.error.ToString();
        EXPECT_EQ(o.error.message().find('\n'), std::string::npos);
      }
      EXPECT_LE(o.events.size(), 10000u);
    }
  }
  // Most flips are caught: protobuf has no checksum, so a flipped value
  // byte decodes to another value, but lengths, tags and the header are
  // checked.
  EXPECT_GT(errors, full.size());
}

}  // namespace
}  // namespace backstep::core
