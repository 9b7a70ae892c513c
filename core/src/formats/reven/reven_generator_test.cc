// The synthetic REVEN generator (testing/reven_generator.h) read back by the
// reader: its planted features, its page tables, and its trace.cache, whose
// resume points must match a full replay.
#include "backstep/testing/reven_generator.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <set>

#include "backstep/testing/reven_fixtures.h"
#include "formats/reven/reven_reader.h"
#include "paging/x86_paging.h"

namespace backstep::core {
namespace {

RegisterId Id(std::string_view name) { return *X86_64().Find(name); }

class TempDir {
 public:
  TempDir() {
    path_ = std::filesystem::temp_directory_path() /
            ("reven_gen_" + std::to_string(getpid()) + "_" + std::to_string(counter_++));
    std::filesystem::create_directories(path_);
  }
  ~TempDir() { std::filesystem::remove_all(path_); }
  std::string File(const std::string& name) const { return (path_ / name).string(); }

 private:
  static inline int counter_ = 0;
  std::filesystem::path path_;
};

std::unique_ptr<RevenReader> OpenFile(const std::string& path) {
  auto source = MapFile(path);
  EXPECT_TRUE(source.ok()) << source.status().ToString();
  if (!source.ok()) return nullptr;
  auto r = RevenReader::Open(*source);
  EXPECT_TRUE(r.ok()) << r.status().ToString();
  return r.ok() ? std::move(*r) : nullptr;
}

TEST(RevenGeneratorTest, PlantedFeaturesAndPaging) {
  TempDir dir;
  testing::RevenGenOptions o;
  o.events = 20000;
  o.seed = 7;
  auto info = testing::GenerateRevenTrace(dir.File("t.bin"), o);
  ASSERT_TRUE(info.ok()) << info.status().ToString();
  auto r = OpenFile(dir.File("t.bin"));
  ASSERT_NE(r, nullptr);
  EXPECT_EQ(r->header().declared_events, 20000u);
  for (const auto& [k, v] : r->header().properties) EXPECT_NE(k, "unmapped registers") << v;
  const std::set<Address> code(info->code_addresses.begin(), info->code_addresses.end());
  EXPECT_GT(code.size(), 200u);
  EXPECT_LT(code.size(), 400u);
  EXPECT_EQ(code.count(info->far_pc), 0u);

  // The page tables in the initial image map every page as described.
  RegisterFile regs = r->InitialRegisters()[0].second;
  EXPECT_EQ(regs.u64(Id("cr3")), info->cr3);
  const PagingRegisters paging = PagingFromState(regs, r->header());
  auto read = [&](Address pa, std::span<std::uint8_t> out) {
    std::vector<std::uint8_t> known(out.size());
    r->ReadInitialMemory(pa, out, known);
    return std::all_of(known.begin(), known.end(), [](std::uint8_t k) { return k == 1; });
  };
  for (const testing::RevenGenPage& p : info->pages) {
    auto t = TranslateX86(paging, p.virtual_address + 8, read);
    ASSERT_TRUE(t.ok()) << t.status().ToString();
    EXPECT_EQ(t->physical, p.physical_address + 8);
  }

  std::uint64_t far_hits = 0, once_writes = 0, outside = 0, continuations = 0, others = 0;
  Event e;
  for (std::uint64_t n = 0;; ++n) {
    const std::uint64_t pc = regs.u64(Id("rip"));
    auto more = r->Next(&e);
    ASSERT_TRUE(more.ok()) << more.status().ToString();
    if (!*more) {
      EXPECT_EQ(n, 20000u);
      break;
    }
    if (e.kind == EventKind::kInstruction) {
      if (pc == info->far_pc) {
        ++far_hits;
        EXPECT_EQ(n, info->far_pc_event);
      } else {
        ASSERT_EQ(code.count(pc), 1u) << "event " << n << " pc " << pc;
      }
    } else {
      ++others;
    }
    for (const MemoryAccess& w : e.writes) {
      if (w.address < info->once_physical + info->once_size &&
          info->once_physical < w.address + w.data.size()) {
        ++once_writes;
        EXPECT_EQ(n, info->once_event);
      }
      outside += w.address == info->outside_address;
    }
    continuations += e.writes.size() >= 15 || e.registers.size() >= 15;
    for (const RegisterWrite& w : e.registers) regs.Apply(w);
  }
  EXPECT_EQ(far_hits, 1u);
  EXPECT_EQ(once_writes, 1u);
  EXPECT_GT(outside, 10u);
  EXPECT_EQ(others, info->other_events);
  EXPECT_GT(continuations, 50u);
  EXPECT_EQ(continuations, info->continuation_events);
}

TEST(RevenGeneratorTest, CacheResumePointsMatchAFullReplay) {
  TempDir dir;
  testing::RevenGenOptions o;
  o.events = 5000;
  o.cache_every = 700;
  o.with_paging = false;
  auto info = testing::GenerateRevenTrace(dir.File("c.bin"), o);
  ASSERT_TRUE(info.ok()) << info.status().ToString();
  auto r = OpenFile(dir.File("c.bin"));
  ASSERT_NE(r, nullptr);
  const std::vector<ResumePoint> points = r->ResumePoints();
  ASSERT_EQ(points.size(), 7u);  // 700, 1400, ... 4900
  ASSERT_EQ(info->cache_points.size(), 7u);
  // One sequential pass: the state and the next events at each point.
  std::vector<std::string> events;
  std::vector<RegisterFile> states;
  RegisterFile regs = r->InitialRegisters()[0].second;
  Event e;
  for (std::uint64_t n = 0;; ++n) {
    for (const ResumePoint& p : points) {
      if (p.position.value == n) states.push_back(regs);
    }
    auto more = r->Next(&e);
    ASSERT_TRUE(more.ok());
    if (!*more) break;
    events.push_back(testing::DescribeEvent(e));
    for (const RegisterWrite& w : e.registers) regs.Apply(w);
  }
  ASSERT_EQ(states.size(), points.size());
  for (std::size_t i = 0; i < points.size(); ++i) {
    SCOPED_TRACE("point " + std::to_string(points[i].position.value));
    EXPECT_EQ(points[i].position.value, info->cache_points[i]);
    ASSERT_EQ(points[i].registers.size(), 1u);
    EXPECT_EQ(points[i].registers[0].first, ThreadId(1));
    EXPECT_TRUE(points[i].registers[0].second == states[i]);
    ASSERT_TRUE(r->Seek(points[i].reader_position).ok());
    for (std::uint64_t k = points[i].position.value; k < points[i].position.value + 100; ++k) {
      ASSERT_TRUE(*r->Next(&e));
      ASSERT_EQ(testing::DescribeEvent(e), events[k]) << "event " << k;
    }
  }
}

TEST(RevenGeneratorTest, BytesEqualFileAndUnpatchedCountScans) {
  TempDir dir;
  testing::RevenGenOptions o;
  o.events = 3000;
  o.seed = 3;
  std::vector<std::uint8_t> bytes;
  ASSERT_TRUE(testing::GenerateRevenTraceBytes(o, &bytes).ok());
  ASSERT_TRUE(testing::GenerateRevenTrace(dir.File("b.bin"), o).ok());
  std::ifstream in(dir.File("b.bin"), std::ios::binary);
  std::vector<std::uint8_t> file((std::istreambuf_iterator<char>(in)), {});
  EXPECT_EQ(file, bytes);
  o.patch_event_count = false;
  std::vector<std::uint8_t> unpatched;
  ASSERT_TRUE(testing::GenerateRevenTraceBytes(o, &unpatched).ok());
  auto a = RevenReader::Open(MemorySource(bytes));
  auto b = RevenReader::Open(MemorySource(unpatched));
  ASSERT_TRUE(a.ok() && b.ok());
  auto ra = testing::ReplayReader(**a, true);
  auto rb = testing::ReplayReader(**b, true);
  ASSERT_TRUE(ra.ok() && rb.ok());
  EXPECT_EQ(ra->events, 3000u);
  EXPECT_EQ(ra->described, rb->described);
}

}  // namespace
}  // namespace backstep::core
