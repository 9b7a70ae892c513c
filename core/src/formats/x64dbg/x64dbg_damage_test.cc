// Damaged files: a small valid two-thread trace (our writer) reloaded at
// every truncated length and with bytes flipped at every offset. The reader
// must never crash, hang or allocate without bound; errors name the file
// and an offset; a cut trace reads as a prefix of the whole until the error.
#include <gtest/gtest.h>

#include "backstep/testing/sweep.h"
#include "backstep/testing/x64dbg_fixtures.h"
#include "formats/x64dbg/x64dbg_reader.h"
#include "formats/x64dbg/x64dbg_test_util.h"

namespace backstep::core {
namespace {

constexpr char kName[] = "damaged.trace64";

struct Outcome {
  bool opened = false;
  std::vector<std::string> events;
  Status error;
};

// A switched-out thread's registers come from its next block, which a cut
// may remove: only the registers of other events are compared.
std::string Describe(const Event& e) {
  std::string s = std::to_string(e.thread.value) + "/" + std::to_string(int(e.kind)) + "/" +
                  std::to_string(e.flags) + "/" +
                  (e.flags & kEventClearsRegisters ? "" : std::to_string(e.registers.size()));
  for (const auto& r : e.reads)
    s += " r" + std::to_string(r.address) + ":" + std::to_string(r.data.size());
  for (const auto& w : e.writes)
    s += " w" + std::to_string(w.address) + ":" + std::to_string(w.data[0]);
  return s;
}

Outcome ReadAll(std::vector<std::uint8_t> bytes) {
  Outcome out;
  auto r = X64dbgReader::Open(MemorySource(std::move(bytes), kName));
  if (!r.ok()) {
    out.error = r.status();
    return out;
  }
  out.opened = true;
  X64dbgReader& reader = **r;
  (void)reader.InitialRegisters();
  (void)reader.ResumePoints();
  const ReaderPosition first = reader.Tell();
  Event e;
  ReaderPosition middle = first;
  for (int i = 0; i < 100000; ++i) {
    if (i == 7) middle = reader.Tell();
    auto more = reader.Next(&e);
    if (!more.ok()) {
      out.error = more.status();
      break;
    }
    if (!*more) break;
    out.events.push_back(Describe(e));
  }
  // Seeking back works or fails cleanly.
  if (reader.Seek(middle).ok()) (void)reader.Next(&e);
  (void)reader.Seek(first);
  return out;
}

void ExpectNamed(const Status& s) {
  EXPECT_NE(s.message().find(std::string(kName) + ": "), std::string::npos) << s.ToString();
  EXPECT_NE(s.message().find("offset 0x"), std::string::npos) << s.ToString();
}

std::vector<std::uint8_t> Small(bool i386) {
  testing::X64dbgProgramOptions o;
  o.instructions = 24;
  o.reveal_at = 10;
  o.i386 = i386;
  auto bytes = testing::X64dbgProgramBytes(o);
  EXPECT_TRUE(bytes.ok());
  return bytes.ok() ? *bytes : std::vector<std::uint8_t>();
}

TEST(X64dbgDamageTest, TruncatedAtEveryLength) {
  for (bool i386 : {false, true}) {
    const std::vector<std::uint8_t> full = Small(i386);
    const Outcome whole = ReadAll(full);
    ASSERT_TRUE(whole.error.ok()) << whole.error.ToString();
    ASSERT_EQ(whole.events.size(), 24u);  // one per block, as x64dbg numbers them
    std::size_t clean = 0;
    for (std::size_t n = 0; n < full.size(); ++n) {
      SCOPED_TRACE("length " + std::to_string(n));
      const Outcome o = ReadAll(std::vector<std::uint8_t>(full.begin(), full.begin() + n));
      if (o.error.ok()) {
        // Cut exactly between blocks: a shorter trace (x64dbg has no count).
        ++clean;
        ASSERT_TRUE(o.opened);
      } else {
        EXPECT_EQ(o.error.code(), StatusCode::kCorruption) << o.error.ToString();
        ExpectNamed(o.error);
      }
      ASSERT_LE(o.events.size(), whole.events.size());
      // Events before the cut match, except the last one, which may lose
      // its registers (the block after it is gone).
      for (std::size_t i = 0; i + 1 < o.events.size(); ++i) EXPECT_EQ(o.events[i], whole.events[i]);
    }
    EXPECT_EQ(clean, 24u);  // header end and every block end but the last
  }
}

TEST(X64dbgDamageTest, FlippedBytesNeverCrash) {
  const std::vector<std::uint8_t> masks = {0xff, 0x01, 0x80, 0x10};
  for (bool i386 : {false, true}) {
    const std::vector<std::uint8_t> full = Small(i386);
    for (std::size_t at = 0; at < full.size(); at += testing::kSweepStride) {
      for (std::uint8_t mask : masks) {
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
