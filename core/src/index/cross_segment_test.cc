// Snapshots that carry state across index segments (index-format.md,
// "Write-state and snapshots"): a single pass cut into many segments and a
// parallel build merged from parts write complete and end snapshots, and
// every whole-page memory read (page walk included) and every register
// answers like the naive replay of the trace, at random positions, at
// segment boundaries and around memory clears.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <random>

#include "backstep/core/cursor.h"
#include "backstep/core/trace.h"
#include "backstep/testing/fake_trace.h"
#include "backstep/testing/fake_trace_generator.h"
#include "backstep/testing/reven_generator.h"
#include "backstep/testing/sweep.h"
#include "index/trace_index.h"
#include "replay/trace_index_of.h"
#include "testing/resume_points.h"
#include "testing/trace_oracle.h"

namespace backstep::core {
namespace {

namespace fs = std::filesystem;

// Small blocks, snapshots every 4 blocks and a budget that cuts the trace
// into many segments (version 8: each page with short data also holds its
// 1.1 KiB XOR table, counted in the budget, hence 600000 instead of 120000).
OpenOptions ManySegments(unsigned parts) {
  OpenOptions o;
  o.keyframe_interval = 256;
  o.index_block_entries = 8;
  o.index_snapshot_blocks = 4;
  o.index_memory_budget = 600000;
  o.index_parts = parts;
  return o;
}

TraceIndex::SnapshotCounts CountAll(const TraceIndex& index) {
  TraceIndex::SnapshotCounts all;
  for (std::uint64_t s = 0; s < index.segment_count(); ++s) {
    const TraceIndex::SnapshotCounts c = index.CountSnapshots(s);
    all.snapshots += c.snapshots;
    all.complete += c.complete;
    all.end += c.end;
    if (s > 0) all.complete_after_first += c.complete;
  }
  return all;
}

// Positions: random ones, each segment's first and last, and their
// neighbours.
std::vector<std::uint64_t> Positions(const TraceIndex& index, std::uint64_t seed, int random) {
  std::vector<std::uint64_t> out;
  const std::uint64_t n = index.event_count();
  std::mt19937_64 rng(seed);
  for (int i = 0; i < random; ++i) out.push_back(rng() % (n + 1));
  const std::uint64_t step = std::max<std::uint64_t>(1, index.segment_count() / 6);
  for (std::uint64_t s = 0; s < index.segment_count(); s += step) {
    const auto [first, end] = index.SegmentRange(s);
    for (std::uint64_t q : {first, first + 1, end - 1, end, end + 1}) {
      if (q <= n) out.push_back(q);
    }
  }
  out.push_back(n);
  return out;
}

// Every register of every thread, and whole pages around `addresses`
// (debugger space), like the oracle.
void ExpectLikeNaiveReplay(const Trace& trace, testing::TraceOracle& oracle,
                           const std::vector<Address>& addresses,
                           const std::vector<std::uint64_t>& positions,
                           std::uint64_t* pages_checked) {
  auto cursor = trace.NewCursor();
  ASSERT_TRUE(cursor.ok());
  std::vector<std::uint8_t> values(kPageSize), known(kPageSize);
  for (std::uint64_t p : positions) {
    SCOPED_TRACE("position " + std::to_string(p));
    ASSERT_TRUE((*cursor)->Seek(Position(p)).ok());
    oracle.Seek(p);
    for (ThreadId t : oracle.all_threads()) {
      auto regs = (*cursor)->Registers(t);
      ASSERT_TRUE(regs.ok());
      ASSERT_TRUE(**regs == *oracle.Registers(t)) << "thread " << t.value;
    }
    for (Address page : addresses) {
      page &= ~(kPageSize - 1);
      const Status s = (*cursor)->ReadMemory(page, values, known);
      if (s.code() == StatusCode::kUnsupported) continue;  // paging registers unknown here
      ASSERT_TRUE(s.ok()) << s.ToString();
      ++*pages_checked;
      // One translation per page when the page maps contiguously, and one
      // assertion at the first difference: a gtest assertion per byte made
      // this test the slowest of the sanitizer build.
      const auto first = oracle.Translate(page);
      const auto last = oracle.Translate(page + kPageSize - 1);
      const bool contiguous = first && last && *last == *first + kPageSize - 1;
      for (std::uint64_t j = 0; j < kPageSize; ++j) {
        const auto native =
            contiguous ? std::optional<Address>(*first + j) : oracle.Translate(page + j);
        const auto want = native ? oracle.Byte(*native) : std::nullopt;
        if ((known[j] != 0) == want.has_value() && values[j] == want.value_or(0)) continue;
        ASSERT_EQ(known[j] != 0, want.has_value()) << std::hex << page + j;
        ASSERT_EQ(values[j], want.value_or(0)) << std::hex << page + j;
      }
    }
  }
}

class CrossSegmentRevenTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char name[] = "/tmp/backstep-cross-segment-XXXXXX";
    dir_ = mkdtemp(name);
    testing::RevenGenOptions opts;
    opts.events = 30000;
    opts.seed = 11;
    opts.cache_every = 1000;
    path_ = dir_ + "/trace.bin";
    auto info = testing::GenerateRevenTrace(path_, opts);
    ASSERT_TRUE(info.ok()) << info.status().ToString();
    info_ = *info;
    auto plain = Trace::Open(path_, ManySegments(1));
    ASSERT_TRUE(plain.ok());
    auto reader = (*plain)->NewReader();
    ASSERT_TRUE(reader.ok());
    auto fake = testing::CaptureTrace(**reader);
    ASSERT_TRUE(fake.ok()) << fake.status().ToString();
    fake_ = std::move(*fake);
    fs::remove(path_ + ".bsidx");
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::unique_ptr<testing::TraceOracle> Oracle() const {
    auto oracle = std::make_unique<testing::TraceOracle>(fake_);
    const testing::RevenGenInfo* info = &info_;
    oracle->set_translate([info](Address va) { return info->Translate(va); });
    return oracle;
  }
  std::vector<Address> DataPages() const {
    std::vector<Address> out;
    for (const auto& r : info_.ranges) {
      for (Address a = r.start; a < r.start + r.size; a += kPageSize) out.push_back(a);
    }
    return out;
  }

  std::string dir_, path_;
  testing::RevenGenInfo info_;
  testing::FakeTrace fake_;
};

TEST_F(CrossSegmentRevenTest, MultiSegmentSinglePassCarriesStateAndAnswersLikeReplay) {
  auto trace = Trace::Open(path_, ManySegments(1));
  ASSERT_TRUE(trace.ok()) << trace.status().ToString();
  const TraceIndex& index = TraceIndexOf(**trace);
  ASSERT_EQ((*trace)->index_status().build_parts, 1u);
  ASSERT_GE(index.segment_count(), 4u);
  const TraceIndex::SnapshotCounts c = CountAll(index);
  // Hot pages keep their state from segment to segment: later segments'
  // snapshots are complete, and every segment but the last ends with one.
  EXPECT_GT(c.complete_after_first, 0u);
  EXPECT_GT(c.end, 0u);
  // Pages hot from their first write on know their whole history (a page
  // that was cold in earlier segments does not: its state there is not kept).
  EXPECT_GT(c.complete, c.snapshots / 2);
  auto oracle = Oracle();
  std::uint64_t checked = 0;
  const int random = 20 / testing::kSweepStride;
  ExpectLikeNaiveReplay(**trace, *oracle, DataPages(), Positions(index, 1, random), &checked);
  EXPECT_GT(checked, random * DataPages().size());
}

TEST_F(CrossSegmentRevenTest, MergedPartsAnswerLikeReplay) {
  for (unsigned parts : {2u, 3u}) {
    SCOPED_TRACE(std::to_string(parts) + " parts");
    fs::remove(path_ + ".bsidx");
    auto trace = Trace::Open(path_, ManySegments(parts));
    ASSERT_TRUE(trace.ok()) << trace.status().ToString();
    ASSERT_EQ((*trace)->index_status().build_parts, parts) << (*trace)->index_status().build_note;
    const TraceIndex& index = TraceIndexOf(**trace);
    const TraceIndex::SnapshotCounts c = CountAll(index);
    EXPECT_GT(c.end, 0u);
    // Parts after the first cannot know the history before their start.
    EXPECT_LT(c.complete, c.snapshots);
    EXPECT_GT(c.complete_after_first, 0u);
    auto oracle = Oracle();
    std::uint64_t checked = 0;
    const int random = 10 / testing::kSweepStride;
    ExpectLikeNaiveReplay(**trace, *oracle, DataPages(), Positions(index, parts, random), &checked);
    EXPECT_GT(checked, random * DataPages().size());
  }
}

// Fake traces: several threads, memory clears (complete states restart at a
// clear), virtual and physical, copied data; a multi-segment single pass
// and a merged parallel build.
TEST(CrossSegmentFakeTest, ClearsAndThreadsAnswerLikeReplay) {
  struct Case {
    const char* name;
    AddressKind kind;
    bool clears;
  };
  for (const Case& c : {Case{"clears_virtual", AddressKind::kVirtual, true},
                        Case{"physical", AddressKind::kPhysical, false},
                        Case{"clears_physical", AddressKind::kPhysical, true}}) {
    SCOPED_TRACE(c.name);
    testing::FakeTraceOptions t;
    t.seed = 77;
    t.events = 6000;
    t.threads = 3;
    t.address_kind = c.kind;
    t.clears = c.clears;
    t.reader_copies_data = true;
    const testing::FakeTrace fake = testing::GenerateFakeTrace(t);
    std::shared_ptr<const ByteSource> source = testing::FakeTraceSource(fake);
    ReaderFactory factory = [source] { return testing::OpenFakeTrace(source); };
    auto with_points = testing::WithResumePoints(factory, {1500, 3000, 4500});
    ASSERT_TRUE(with_points.ok());
    std::vector<Address> pages;
    for (const auto& [lo, hi] : testing::FakeDataRegions(c.kind)) {
      for (Address a = lo & ~(kPageSize - 1); a < hi; a += kPageSize) pages.push_back(a);
    }
    for (unsigned parts : {1u, 3u}) {
      SCOPED_TRACE(std::to_string(parts) + " parts");
      OpenOptions o = ManySegments(parts);
      o.index_memory_budget = 60000;  // 20000 before version 8's XOR tables
      auto trace = Trace::OpenWith(parts == 1 ? factory : *with_points, "", o);
      ASSERT_TRUE(trace.ok()) << trace.status().ToString();
      const TraceIndex& index = TraceIndexOf(**trace);
      ASSERT_GE(index.segment_count(), 4u);
      EXPECT_GT(CountAll(index).end, 0u);
      testing::TraceOracle oracle(fake);
      std::uint64_t checked = 0;
      ExpectLikeNaiveReplay(**trace, oracle, pages, Positions(index, parts, 25), &checked);
      EXPECT_GT(checked, 10 * pages.size());
    }
  }
}

}  // namespace
}  // namespace backstep::core
