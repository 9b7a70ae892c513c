// Damaged files (leveldb log_test / ninja Truncated): the small file and
// gdb's own samples reloaded at every truncated length, and the small file
// with bytes flipped at every offset. The reader must never crash, hang or
// allocate without bound; errors name the file and an offset.
#include <gtest/gtest.h>

#include "backstep/testing/sweep.h"
#include "backstep/testing/tfile_fixtures.h"
#include "formats/tfile/tfile_reader.h"

namespace backstep::core {
namespace {

constexpr char kName[] = "damaged.tf";

struct Outcome {
  bool opened = false;
  std::vector<std::uint64_t> events;  // a hash of each event's content
  Status error;                       // OK when every frame decoded
};

// A hash of everything an event says (cheaper than DescribeEvent: the
// samples are reloaded ~120,000 times).
std::uint64_t HashEvent(const Event& e) {
  std::uint64_t h = 0;
  auto mix = [&h](const void* p, std::size_t n) {
    h = h * 0x100000001b3 ^
        std::hash<std::string_view>()(std::string_view(static_cast<const char*>(p), n));
  };
  mix(&e.kind, 1);
  mix(&e.flags, 4);
  mix(&e.thread.value, 8);
  mix(e.description.data(), e.description.size());
  for (const RegisterWrite& w : e.registers) {
    mix(&w.reg, 2);
    mix(w.value, X86_64().info(w.reg).size);
  }
  for (const MemoryAccess& m : e.writes) {
    mix(&m.address, 8);
    mix(m.data.data(), m.data.size());
  }
  return h;
}

// A view of bytes owned by the test: no copy per reload (the samples are
// reloaded ~120,000 times, under ASan too).
class SpanSource final : public ByteSource {
 public:
  explicit SpanSource(std::span<const std::uint8_t> bytes) : bytes_(bytes) {}
  std::span<const std::uint8_t> data() const override { return bytes_; }
  const std::string& name() const override { return name_; }

 private:
  std::span<const std::uint8_t> bytes_;
  std::string name_ = kName;
};

// `typed`: also exercise the typed API on every frame. REQUIRES: `bytes`
// outlives the call.
Outcome ReadAll(std::span<const std::uint8_t> bytes, bool typed = true) {
  Outcome out;
  auto r = TfileReader::Open(std::make_shared<SpanSource>(bytes));
  if (!r.ok()) {
    out.error = r.status();
    return out;
  }
  out.opened = true;
  TfileReader& reader = **r;
  std::vector<std::uint8_t> mem(16), known(16);
  reader.ReadInitialMemory(~Address{0} - 4, mem, known);
  (void)reader.InitialRegisters();
  for (std::uint64_t n = 0; typed && n < reader.frame_count(); ++n) {
    (void)reader.FrameTracepoint(n);
    EXPECT_TRUE(reader.FrameRegisters(n).ok());
  }
  Event e;
  RegisterFile regs(X86_64());
  while (true) {
    auto more = reader.Next(&e);
    if (!more.ok()) {
      out.error = more.status();
      return out;
    }
    if (!*more) break;
    for (const RegisterWrite& w : e.registers) regs.Apply(w);
    out.events.push_back(HashEvent(e));
  }
  return out;
}

void ExpectNamed(const Status& s) {
  EXPECT_TRUE(s.message().starts_with(std::string(kName) + ": ")) << s.ToString();
  EXPECT_NE(s.message().find("offset 0x"), std::string::npos) << s.ToString();
}

// Every cut either fails to open (inside the definitions), or opens and
// yields a prefix of the whole file's frames, ending cleanly (a cut at a
// frame boundary or in the end marker) or with a Corruption naming the
// frame that was cut.
// `stride` > 1 cuts at every stride-th length only (the sanitizer build:
// these sweeps are its slowest tests, and only slow).
void CheckEveryTruncation(const std::vector<std::uint8_t>& full, std::size_t expected_frames,
                          bool typed, std::size_t stride = 1) {
  const Outcome whole = ReadAll(full);
  ASSERT_TRUE(whole.error.ok()) << whole.error.ToString();
  ASSERT_EQ(whole.events.size(), expected_frames);
  std::size_t opened = 0, clean = 0;
  for (std::size_t n = 0; n < full.size(); n += stride) {
    const Outcome o = ReadAll(std::span<const std::uint8_t>(full).first(n), typed);
    if (!o.opened) {
      ASSERT_EQ(o.error.code(), StatusCode::kCorruption) << n << ": " << o.error.ToString();
      ExpectNamed(o.error);
      continue;
    }
    ++opened;
    ASSERT_LE(o.events.size(), whole.events.size()) << n;
    for (std::size_t i = 0; i < o.events.size(); ++i) ASSERT_EQ(o.events[i], whole.events[i]) << n;
    if (o.error.ok()) {
      ++clean;
      continue;
    }
    ASSERT_EQ(o.error.code(), StatusCode::kCorruption) << n;
    ExpectNamed(o.error);
    EXPECT_NE(o.error.message().find("frame " + std::to_string(o.events.size()) + " at offset"),
              std::string::npos)
        << n << ": " << o.error.ToString();
  }
  EXPECT_GT(opened, 0u);
  if (stride == 1) {
    EXPECT_GE(clean, expected_frames + 1);  // every frame boundary, and the marker
  }
}

TEST(TfileDamageTest, SmallFileTruncatedAtEveryLength) {
  CheckEveryTruncation(testing::SmallTfile(), testing::kSmallTfileFrames, true);
  CheckEveryTruncation(testing::SmallTfile(/*tdesc=*/false), testing::kSmallTfileFrames, true);
}

void CheckSample(const std::string& name, std::size_t frames) {
  const auto bytes = testing::ReadFileBytes(testing::SamplesDir() + "/gdb_tfile/" + name);
  ASSERT_FALSE(bytes.empty()) << "missing sample (set BACKSTEP_SAMPLES_DIR)";
  CheckEveryTruncation(bytes, frames, false, testing::SweepStride(29));
}

// 41,773 and 76,262 reloads: the slowest tests of the module (seconds; under
// the sanitizers, minutes: there they cut at every 29th length).
TEST(TfileDamageTest, WorkSampleTruncatedAtEveryLength) { CheckSample("work_amd64.tf", 15); }
TEST(TfileDamageTest, SteppingSampleTruncatedAtEveryLength) {
  CheckSample("stepping_amd64.tf", 25);
}

// Every byte with four masks; the tdesc text (10 KiB of XML) with one.
TEST(TfileDamageTest, FlippedBytesNeverCrash) {
  for (bool tdesc : {true, false}) {
    std::vector<std::uint8_t> bytes = testing::SmallTfile(tdesc);
    const std::vector<std::uint8_t> masks =
        tdesc ? std::vector<std::uint8_t>{0x01} : std::vector<std::uint8_t>{0xff, 0x01, 0x80, 0x10};
    for (std::size_t at = 0; at < bytes.size(); at += testing::kSweepStride) {
      for (std::uint8_t mask : masks) {
        bytes[at] ^= mask;
        const Outcome o = ReadAll(bytes);
        bytes[at] ^= mask;
        if (!o.error.ok()) {
          SCOPED_TRACE("offset " + std::to_string(at));
          EXPECT_TRUE(o.error.message().starts_with(std::string(kName) + ": "))
              << o.error.ToString();
        }
      }
    }
  }
}

TEST(TfileDamageTest, GdbSampleFlipsNeverCrash) {
  const auto full = testing::ReadFileBytes(testing::SamplesDir() + "/gdb_tfile/work_amd64.tf");
  ASSERT_FALSE(full.empty());
  std::vector<std::uint8_t> bytes = full;
  for (std::size_t at = 0; at < full.size(); at += 7 * testing::kSweepStride) {
    bytes[at] ^= static_cast<std::uint8_t>(0x5a ^ at);
    const Outcome o = ReadAll(bytes);
    bytes[at] = full[at];
    if (!o.error.ok()) {
      EXPECT_TRUE(o.error.message().starts_with(std::string(kName) + ": ")) << o.error.ToString();
    }
  }
}

}  // namespace
}  // namespace backstep::core
