// The usercorn reader's damage battery (core's usercorn_damage_test) on a
// file written by `backstep record` rather than by the writer's fixtures: a
// real program's image and instructions, cut at many lengths and with bytes
// flipped at many offsets. The reader must never crash or hang; a cut file
// ends cleanly after its last complete event or fails to open with a
// Corruption naming the file and offset; a flipped byte gives either the
// same events or an error naming the file and offset.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <random>
#include <string>
#include <vector>

#include "backstep/testing/usercorn_reading.h"
#include "recorder/recorder.h"
#include "recorder/usercorn_sink.h"

namespace backstep::record {
namespace {

constexpr char kName[] = "recorded.ucir";

struct Outcome {
  bool opened = false;
  std::vector<std::string> events;
  core::Status error;  // OK when the trace ended cleanly
};

Outcome ReadAll(std::vector<std::uint8_t> bytes) {
  Outcome out;
  auto r = core::testing::OpenUsercornBytes(std::move(bytes), kName);
  if (!r.ok()) {
    out.error = r.status();
    return out;
  }
  out.opened = true;
  core::Event e;
  while (true) {
    auto more = (*r)->Next(&e);
    if (!more.ok()) {
      out.error = more.status();
      return out;
    }
    if (!*more) break;
    out.events.push_back(core::testing::EventSummary(e));
  }
  return out;
}

void ExpectNamed(const core::Status& s) {
  EXPECT_NE(s.message().find(std::string(kName) + ": "), std::string::npos) << s.ToString();
  EXPECT_NE(s.message().find("offset"), std::string::npos) << s.ToString();
}

class RecordedTraceBattery : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    const std::string path =
        ::testing::TempDir() + "/battery_" + std::to_string(getpid()) + ".ucir";
    auto sink = UsercornSink::Create(path);
    ASSERT_TRUE(sink.ok()) << sink.status().message();
    RecordOptions options;
    options.spawn.argv = {std::string(BACKSTEP_RECORD_PROGRAMS) + "/syscalls_O2_pie"};
    options.spawn.stdout_fd = open("/dev/null", O_WRONLY);
    options.max_instructions = 4000;
    auto result = Record(options, **sink);
    close(options.spawn.stdout_fd);
    ASSERT_TRUE(result.ok()) << result.status().message();
    std::ifstream in(path, std::ios::binary);
    file_ = new std::vector<std::uint8_t>((std::istreambuf_iterator<char>(in)), {});
    std::filesystem::remove(path);
  }
  static void TearDownTestSuite() { delete file_; }

  static std::vector<std::uint8_t>* file_;
};
std::vector<std::uint8_t>* RecordedTraceBattery::file_ = nullptr;

TEST_F(RecordedTraceBattery, WholeFileReadsCleanly) {
  const Outcome whole = ReadAll(*file_);
  ASSERT_TRUE(whole.error.ok()) << whole.error.ToString();
  EXPECT_GE(whole.events.size(), 4000u);
}

TEST_F(RecordedTraceBattery, TruncatedAtManyLengths) {
  const std::vector<std::uint8_t>& full = *file_;
  const Outcome whole = ReadAll(full);
  ASSERT_TRUE(whole.error.ok());
  // Every length through the header and the first chunk headers, then 1500
  // lengths spread over the rest.
  std::vector<std::size_t> lengths;
  for (std::size_t n = 0; n < 512 && n < full.size(); ++n) lengths.push_back(n);
  for (std::size_t i = 0; i < 1500; ++i) lengths.push_back(512 + (full.size() - 512) * i / 1500);
  std::size_t opened = 0;
  for (std::size_t n : lengths) {
    SCOPED_TRACE("length " + std::to_string(n));
    const Outcome o = ReadAll(std::vector<std::uint8_t>(full.begin(), full.begin() + n));
    if (!o.opened) {
      EXPECT_EQ(o.error.code(), core::StatusCode::kCorruption) << o.error.ToString();
      if (n != 74) ExpectNamed(o.error);  // 74: the header alone opens as an empty trace
      continue;
    }
    ++opened;
    ASSERT_TRUE(o.error.ok()) << o.error.ToString();
    ASSERT_LE(o.events.size(), whole.events.size());
    for (std::size_t i = 0; i + 1 < o.events.size(); ++i) ASSERT_EQ(o.events[i], whole.events[i]);
  }
  EXPECT_GT(opened, 0u);
}

TEST_F(RecordedTraceBattery, FlippedBytesGiveTheSameEventsOrANamedError) {
  const std::vector<std::uint8_t>& full = *file_;
  const Outcome whole = ReadAll(full);
  std::mt19937_64 random(7);
  std::size_t errors = 0;
  for (int trial = 0; trial < 1500; ++trial) {
    const std::size_t at = trial < 100 ? trial : random() % full.size();
    const std::uint8_t mask = static_cast<std::uint8_t>(1u << (random() % 8));
    SCOPED_TRACE("offset " + std::to_string(at) + " ^ " + std::to_string(mask));
    std::vector<std::uint8_t> bytes = full;
    bytes[at] ^= mask;
    const Outcome o = ReadAll(std::move(bytes));
    if (o.error.ok()) continue;
    ++errors;
    EXPECT_TRUE(o.error.IsCorruption() || o.error.IsUnsupported()) << o.error.ToString();
    ExpectNamed(o.error);
  }
  // Every chunk is CRC-checked: most flips must be caught.
  EXPECT_GT(errors, 1000u);
}

}  // namespace
}  // namespace backstep::record
