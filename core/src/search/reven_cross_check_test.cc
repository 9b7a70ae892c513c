// Cross-check over a generated REVEN trace (a physical-memory trace read by
// the real reader): cursor registers, physical memory, virtual memory through
// the page walk, and searches, against the naive oracle.
#include <gtest/gtest.h>

#include <filesystem>
#include <random>

#include "backstep/core/cursor.h"
#include "backstep/core/search.h"
#include "backstep/core/trace.h"
#include "backstep/testing/fake_trace.h"
#include "backstep/testing/reven_generator.h"
#include "testing/naive_search.h"
#include "testing/trace_oracle.h"

namespace backstep::core {
namespace {

namespace fs = std::filesystem;

class RevenCrossCheck : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    char name[] = "/tmp/backstep-reven-check-XXXXXX";
    dir_ = new std::string(mkdtemp(name));
    testing::RevenGenOptions o;
    o.events = 30000;
    o.seed = 7;
    o.cache_every = 5000;
    auto info = testing::GenerateRevenTrace(*dir_ + "/trace.bin", o);
    ASSERT_TRUE(info.ok()) << info.status().ToString();
    info_ = new testing::RevenGenInfo(*info);
    OpenOptions options;
    options.keyframe_interval = 300;
    options.index_block_entries = 8;
    options.index_snapshot_blocks = 4;
    options.index_memory_budget = 200000;
    auto trace = Trace::Open(*dir_ + "/trace.bin", options);
    ASSERT_TRUE(trace.ok()) << trace.status().ToString();
    trace_ = new std::shared_ptr<Trace>(*trace);
    auto reader = (*trace_)->NewReader();
    ASSERT_TRUE(reader.ok());
    auto fake = testing::CaptureTrace(**reader);
    ASSERT_TRUE(fake.ok()) << fake.status().ToString();
    fake_ = new testing::FakeTrace(std::move(*fake));
  }
  static void TearDownTestSuite() {
    delete trace_;
    delete fake_;
    delete info_;
    fs::remove_all(*dir_);
    delete dir_;
  }
  void SetUp() override {
    ASSERT_TRUE(fake_ && trace_);
    oracle_ = std::make_unique<testing::TraceOracle>(*fake_);
    const testing::RevenGenInfo* info = info_;
    oracle_->set_translate([info](Address va) { return info->Translate(va); });
  }

  static std::string* dir_;
  static testing::RevenGenInfo* info_;
  static testing::FakeTrace* fake_;
  static std::shared_ptr<Trace>* trace_;
  std::unique_ptr<testing::TraceOracle> oracle_;
};

std::string* RevenCrossCheck::dir_ = nullptr;
testing::RevenGenInfo* RevenCrossCheck::info_ = nullptr;
testing::FakeTrace* RevenCrossCheck::fake_ = nullptr;
std::shared_ptr<Trace>* RevenCrossCheck::trace_ = nullptr;

TEST_F(RevenCrossCheck, CursorMatchesOracle) {
  const Trace& trace = **trace_;
  ASSERT_EQ(trace.event_count(), fake_->events.size());
  auto cursor = trace.NewCursor();
  ASSERT_TRUE(cursor.ok());
  std::mt19937_64 rng(3);
  const std::uint64_t n = trace.event_count();
  for (int i = 0; i < 25; ++i) {
    const std::uint64_t p = i == 0 ? n : rng() % (n + 1);
    ASSERT_TRUE((*cursor)->Seek(Position(p)).ok());
    oracle_->Seek(p);
    for (ThreadId t : oracle_->all_threads()) {
      ASSERT_TRUE(**(*cursor)->Registers(t) == *oracle_->Registers(t)) << "position " << p;
    }
    // Virtual reads through the page walk, across page boundaries.
    for (const testing::RevenGenRange& range : info_->ranges) {
      const Address va = range.start + rng() % (range.size - 300);
      std::uint8_t v[300], k[300];
      ASSERT_TRUE((*cursor)->ReadMemory(va, v, k).ok());
      for (int j = 0; j < 300; ++j) {
        const auto pa = info_->Translate(va + j);
        const auto want = pa ? oracle_->Byte(*pa) : std::nullopt;
        ASSERT_EQ(k[j] != 0, want.has_value()) << range.name << " va " << std::hex << va + j;
        ASSERT_EQ(v[j], want.value_or(0)) << range.name << " va " << std::hex << va + j;
      }
      // The same bytes by physical address.
      if (auto pa = info_->Translate(va)) {
        ASSERT_TRUE((*cursor)->ReadMemory(*pa, {v, 16}, {k, 16}, AddressKind::kPhysical).ok());
        for (int j = 0; j < 16 && ((*pa + j) & 4095) >= (*pa & 4095); ++j) {
          ASSERT_EQ(k[j] ? std::optional<std::uint8_t>(v[j]) : std::nullopt,
                    oracle_->Byte(*pa + j));
        }
      }
    }
  }
}

TEST_F(RevenCrossCheck, PlantedFeaturesAreFound) {
  const Trace& trace = **trace_;
  const std::uint64_t n = trace.event_count();
  ASSERT_NE(info_->far_pc_event, 0u);
  StopCondition bp;
  bp.breakpoints.push_back(info_->far_pc);
  auto fwd = RunUntil(trace, Position(0), Direction::kForward, bp);
  auto bwd = RunUntil(trace, Position(n), Direction::kBackward, bp);
  ASSERT_TRUE(fwd.ok() && bwd.ok());
  EXPECT_EQ(fwd->reason, StopEvent::Reason::kBreakpoint);
  EXPECT_EQ(fwd->position.value, info_->far_pc_event);
  EXPECT_EQ(bwd->position.value, info_->far_pc_event);
  StopCondition watch;
  watch.watches.push_back(Watch{info_->once_address, info_->once_size, WatchKind::kWrite, false});
  auto wf = RunUntil(trace, Position(0), Direction::kForward, watch);
  auto wb = RunUntil(trace, Position(n), Direction::kBackward, watch);
  ASSERT_TRUE(wf.ok() && wb.ok()) << wf.status().ToString();
  EXPECT_EQ(wf->reason, StopEvent::Reason::kWatch);
  EXPECT_EQ(wf->position.value, info_->once_event + 1);
  EXPECT_EQ(wb->position.value, info_->once_event);
  auto last = LastWrite(trace, info_->once_address, info_->once_size, Position(n));
  ASSERT_TRUE(last.ok() && last->has_value());
  EXPECT_EQ((*last)->event, info_->once_event);
  EXPECT_EQ((*last)->address, info_->once_address);
}

TEST_F(RevenCrossCheck, RunUntilMatchesNaiveSearch) {
  const Trace& trace = **trace_;
  const std::uint64_t n = trace.event_count();
  std::mt19937_64 rng(11);
  const auto& pcs = info_->code_addresses;
  for (int i = 0; i < 60; ++i) {
    StopCondition c;
    for (int b = rng() % 3; b > 0; --b) c.breakpoints.push_back(pcs[rng() % pcs.size()]);
    for (int w = rng() % 3; w > 0; --w) {
      const testing::RevenGenRange& range = info_->ranges[rng() % info_->ranges.size()];
      Watch watch;
      watch.length = 1 + rng() % 8;
      watch.address = range.start + rng() % (range.size - 8);
      watch.only_changes = rng() % 2;
      c.watches.push_back(watch);
    }
    if (rng() % 4 == 0) c.fence_low = Position(rng() % n);
    if (rng() % 4 == 0) c.fence_high = Position(rng() % n);
    const std::uint64_t from = rng() % (n + 1);
    const Direction d = rng() % 2 ? Direction::kForward : Direction::kBackward;
    const StopEvent want = testing::NaiveRunUntil(*oracle_, from, d, c);
    auto got = RunUntil(trace, Position(from), d, c);
    ASSERT_TRUE(got.ok()) << got.status().ToString();
    EXPECT_EQ(got->reason, want.reason) << "query " << i;
    EXPECT_EQ(got->position, want.position) << "query " << i;
    EXPECT_EQ(got->thread, want.thread) << "query " << i;
  }
}

}  // namespace
}  // namespace backstep::core
