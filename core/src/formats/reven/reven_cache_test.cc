// trace.cache beside a trace: valid caches give resume points, bad ones are
// ignored with a warning in the properties and never fail the trace.
#include "formats/reven/reven_cache.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <functional>

#include "backstep/testing/reven_fixtures.h"
#include "formats/reven/reven_reader.h"

namespace backstep::core {
namespace {

RegisterId Id(std::string_view name) { return *X86_64().Find(name); }

std::vector<std::uint8_t> Le(std::uint64_t v, std::size_t n) {
  std::vector<std::uint8_t> out(n);
  for (std::size_t i = 0; i < n && i < 8; ++i) out[i] = static_cast<std::uint8_t>(v >> (8 * i));
  return out;
}

void WriteBytes(const std::string& path, const std::vector<std::uint8_t>& bytes) {
  std::ofstream(path, std::ios::binary)
      .write(reinterpret_cast<const char*>(bytes.data()),
             static_cast<std::streamsize>(bytes.size()));
}

class RevenCacheTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() / ("reven_cache_" + std::to_string(getpid()));
    std::filesystem::create_directories(dir_);
    trace_ = (dir_ / "small.bin").string();
    WriteBytes(trace_, testing::SmallRevenTrace());
    auto r = Open();
    Event e;
    for (;;) {
      offsets_.push_back(r->Tell().offset - r->events_payload_offset());
      if (!*r->Next(&e)) break;
    }
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  std::unique_ptr<RevenReader> Open() {
    auto source = MapFile(trace_);
    EXPECT_TRUE(source.ok());
    auto r = RevenReader::Open(*source);
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    return r.ok() ? std::move(*r) : nullptr;
  }

  // A valid point at `context` whose rax is `rax`.
  RevenCachePointData Point(std::uint64_t context, std::uint64_t rax) const {
    RevenCachePointData p;
    p.context_id = context;
    p.trace_events_offset = offsets_[context];
    const std::pair<std::uint16_t, std::size_t> sizes[] = {
        {0, 8}, {1, 8}, {2, 8}, {3, 4}, {4, 2}, {5, 64}, {6, 4}, {7, 10}, {0x101, 8}};
    for (auto [id, size] : sizes) p.registers.emplace_back(id, Le(id == 0 ? rax : id, size));
    return p;
  }

  void WriteCache(const std::vector<RevenCachePointData>& points, std::uint32_t page = 4096) {
    std::vector<std::uint8_t> bytes;
    ASSERT_TRUE(AppendRevenCache(RevenMetadata(), page, points, &bytes).ok());
    WriteBytes(trace_ + ".cache", bytes);
  }

  std::string CacheProperty(const RevenReader& r) {
    for (const auto& [k, v] : r.header().properties) {
      if (k == "cache") return v;
    }
    return "<none>";
  }

  std::filesystem::path dir_;
  std::string trace_;
  std::vector<std::uint64_t> offsets_;  // event i, from the events payload
};

TEST_F(RevenCacheTest, NoCacheNoPoints) {
  auto r = Open();
  EXPECT_TRUE(r->ResumePoints().empty());
  EXPECT_EQ(CacheProperty(*r), "<none>");
}

TEST_F(RevenCacheTest, ValidCacheGivesResumePoints) {
  RevenCachePointData five = Point(5, 0x55);
  five.pages.emplace_back(0x1000, std::vector<std::uint8_t>(256, 0xaa));
  WriteCache({Point(2, 0x22), five}, 256);
  auto r = Open();
  const std::vector<ResumePoint> points = r->ResumePoints();
  ASSERT_EQ(points.size(), 2u);
  EXPECT_NE(CacheProperty(*r).find("2 resume points"), std::string::npos) << CacheProperty(*r);
  EXPECT_EQ(points[0].position, Position(2));
  EXPECT_EQ(points[1].position, Position(5));
  EXPECT_EQ(points[1].registers[0].second.u64(Id("rax")), 0x55u);
  EXPECT_EQ(points[1].registers[0].second.u64(Id("cs")), 4u);
  // The reader position resumes exactly at event 5.
  ASSERT_TRUE(r->Seek(points[1].reader_position).ok());
  EXPECT_EQ(r->Tell().aux, 5u);
  Event e;
  ASSERT_TRUE(*r->Next(&e));
  EXPECT_EQ(e.registers.size(), 3u);  // event 5: rbx, x87r0 ADD, eflags AND
}

TEST_F(RevenCacheTest, BadCachesAreIgnoredWithAReason) {
  struct Case {
    const char* name;
    std::function<void(std::vector<RevenCachePointData>&)> change;
    const char* reason;
  };
  const Case cases[] = {
      {"duplicate", [](auto& p) { p[1].context_id = 2; }, "strictly descending"},
      {"context 0", [](auto& p) { p[0].context_id = 0; }, "context 0"},
      {"past the end", [](auto& p) { p[1].context_id = 10; }, "beyond the trace's 9 events"},
      {"bad offset", [](auto& p) { p[1].trace_events_offset = 1 << 20; }, "outside the events"},
      {"missing register", [](auto& p) { p[1].registers.pop_back(); }, "has no value"},
      {"wrong size", [](auto& p) { p[1].registers[0].second.resize(4); }, "declared 8"},
      {"unknown id", [](auto& p) { p[1].registers[0].first = 0x40; }, "operation id 64"},
      {"misaligned page",
       [](auto& p) { p[1].pages.emplace_back(0x1004, std::vector<std::uint8_t>(4096)); },
       "not aligned"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    std::vector<RevenCachePointData> points = {Point(2, 1), Point(5, 2)};
    c.change(points);
    WriteCache(points);
    auto r = Open();
    ASSERT_NE(r, nullptr);
    EXPECT_TRUE(r->ResumePoints().empty());
    const std::string why = CacheProperty(*r);
    EXPECT_EQ(why.rfind("ignored: Corruption: " + trace_ + ".cache: ", 0), 0u) << why;
    EXPECT_NE(why.find(c.reason), std::string::npos) << why;
    auto replay = testing::ReplayReader(*r);
    ASSERT_TRUE(replay.ok());
    EXPECT_EQ(replay->events, 9u);
  }
}

TEST_F(RevenCacheTest, DamagedCacheFilesNeverFailTheTrace) {
  WriteCache({Point(2, 1), Point(5, 2)});
  std::vector<std::uint8_t> cache;
  {
    std::ifstream in(trace_ + ".cache", std::ios::binary);
    cache.assign(std::istreambuf_iterator<char>(in), {});
  }
  for (std::size_t n = 0; n < cache.size(); n += (n < 3600 ? 97 : 1)) {
    WriteBytes(trace_ + ".cache", std::vector<std::uint8_t>(cache.begin(), cache.begin() + n));
    auto r = Open();
    ASSERT_NE(r, nullptr) << n;
    EXPECT_TRUE(r->ResumePoints().empty()) << n;
    EXPECT_EQ(CacheProperty(*r).rfind("ignored: ", 0), 0u) << n;
  }
  WriteBytes(trace_ + ".cache", testing::SmallRevenTrace());  // a trace, not a cache
  auto r = Open();
  EXPECT_NE(CacheProperty(*r).find("resource type 1"), std::string::npos) << CacheProperty(*r);
}

}  // namespace
}  // namespace backstep::core
