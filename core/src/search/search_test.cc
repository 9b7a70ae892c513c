#include "backstep/core/search.h"

#include <gtest/gtest.h>

#include <random>
#include <sstream>

#include "backstep/core/cursor.h"
#include "backstep/testing/fake_trace.h"
#include "testing/cross_check.h"
#include "testing/naive_search.h"
#include "testing/trace_oracle.h"

namespace backstep::core {
namespace {

using testing::CrossCheckConfig;
using testing::FakeTrace;
using testing::TraceOracle;

std::string Describe(const StopEvent& s) {
  std::ostringstream out;
  out << "reason " << int(s.reason) << " position " << s.position.value << " thread "
      << s.thread.value << " address 0x" << std::hex << s.address << std::dec << " event "
      << s.event;
  return out.str();
}

std::string Describe(const StopCondition& c, std::uint64_t from, Direction d) {
  std::ostringstream out;
  out << (d == Direction::kForward ? "forward" : "backward") << " from " << from << " bps";
  for (Address a : c.breakpoints) out << " 0x" << std::hex << a << std::dec;
  for (const Watch& w : c.watches) {
    out << " watch 0x" << std::hex << w.address << std::dec << "+" << w.length << " kind "
        << int(w.kind) << (w.only_changes ? " changes" : "");
  }
  if (c.thread) out << " thread " << c.thread->value;
  out << " fences " << c.fence_low.value << ".." << c.fence_high.value;
  return out.str();
}

class SearchCrossCheck : public ::testing::TestWithParam<CrossCheckConfig> {
 protected:
  void SetUp() override {
    trace_ = testing::GenerateFakeTrace(GetParam().trace);
    auto opened = testing::OpenFakeInMemory(trace_, GetParam().open);
    ASSERT_TRUE(opened.ok()) << opened.status().ToString();
    opened_ = *opened;
    oracle_ = std::make_unique<TraceOracle>(trace_);
  }

  // A random watch in the data regions (debugger addresses).
  Watch RandomWatch(std::mt19937_64& rng) {
    Watch w;
    auto regions = testing::FakeDataRegions(trace_.address_kind);
    if (trace_.address_kind == AddressKind::kPhysical && rng() % 3 == 0) {
      // Through the 4 KiB-mapped virtual pages.
      regions = {{testing::kMappedVirtual, testing::kMappedVirtual + testing::kMappedPages * 4096}};
    }
    const auto& [lo, hi] = regions[rng() % regions.size()];
    w.length = 1 + rng() % 12;
    w.address = rng() % 2 ? lo + rng() % 512 : lo + rng() % (hi - lo - w.length);
    const int kinds = trace_.records_reads ? 3 : 1;
    w.kind = static_cast<WatchKind>(rng() % kinds);
    w.only_changes = rng() % 2;  // only meaningful for kWrite
    return w;
  }

  StopCondition RandomCondition(std::mt19937_64& rng) {
    StopCondition c;
    const auto pcs = testing::FakePcPool();
    for (int n = rng() % 3; n > 0; --n) c.breakpoints.push_back(pcs[rng() % pcs.size()]);
    if (rng() % 5 == 0) c.breakpoints.push_back(0xdead0000);  // never executed
    for (int n = rng() % 3; n > 0; --n) c.watches.push_back(RandomWatch(rng));
    if (rng() % 3 == 0) c.thread = ThreadId(100 + rng() % (GetParam().trace.threads + 1));
    const std::uint64_t n = trace_.events.size();
    if (rng() % 4 == 0) c.fence_low = Position(rng() % n);
    if (rng() % 4 == 0) c.fence_high = Position(rng() % (n + 1));
    return c;
  }

  FakeTrace trace_;
  std::shared_ptr<Trace> opened_;
  std::unique_ptr<TraceOracle> oracle_;
};

TEST_P(SearchCrossCheck, RunUntilMatchesNaiveSearch) {
  std::mt19937_64 rng(GetParam().trace.seed * 7);
  const std::uint64_t n = trace_.events.size();
  for (int i = 0; i < 300; ++i) {
    const StopCondition c = RandomCondition(rng);
    const std::uint64_t from = i == 0 ? 0 : i == 1 ? n : rng() % (n + 1);
    const Direction d = rng() % 2 ? Direction::kForward : Direction::kBackward;
    const StopEvent want = testing::NaiveRunUntil(*oracle_, from, d, c);
    auto got = RunUntil(*opened_, Position(from), d, c);
    ASSERT_TRUE(got.ok()) << got.status().ToString();
    const std::string context =
        Describe(c, from, d) + "\n want " + Describe(want) + "\n got  " + Describe(*got);
    ASSERT_EQ(got->reason, want.reason) << context;
    ASSERT_EQ(got->position, want.position) << context;
    ASSERT_EQ(got->thread, want.thread) << context;
    if (want.reason == StopEvent::Reason::kBreakpoint) {
      ASSERT_EQ(got->address, want.address) << context;
    }
    if (want.reason == StopEvent::Reason::kWatch) {
      ASSERT_EQ(got->event, want.event) << context;
      bool inside = false;
      for (const Watch& w : c.watches) {
        inside |= got->address >= w.address && got->address < w.address + w.length;
      }
      ASSERT_TRUE(inside) << context;
    }
  }
}

// Compares an Access with one of the naive accesses of the same event.
void ExpectOneOf(const Access& got, const std::vector<Access>& candidates, const char* what) {
  for (const Access& a : candidates) {
    if (a.event == got.event && a.is_write == got.is_write && a.address == got.address &&
        a.data == got.data && a.thread == got.thread) {
      return;
    }
  }
  ADD_FAILURE() << what << ": no matching access at event " << got.event << " address 0x"
                << std::hex << got.address;
}

TEST_P(SearchCrossCheck, AccessQueriesMatchNaive) {
  std::mt19937_64 rng(GetParam().trace.seed * 13);
  const std::uint64_t n = trace_.events.size();
  const AddressKind native = trace_.address_kind;
  for (int i = 0; i < 150; ++i) {
    const auto regions = testing::FakeDataRegions(native);
    const auto& [lo, hi] = regions[rng() % regions.size()];
    const std::uint64_t length = 1 + rng() % 40;
    const Address a = rng() % 2 ? lo + rng() % 512 : lo + rng() % (hi - lo - length);
    const std::uint64_t at = rng() % (n + 1);
    for (bool writes : {true, false}) {
      if (!writes && !trace_.records_reads) {
        EXPECT_FALSE(LastRead(*opened_, a, length, Position(at), native).ok());
        continue;
      }
      const auto all = testing::NaiveAccesses(*oracle_, a, a + length, 0, n, writes, !writes);
      std::optional<std::uint64_t> last, next;
      for (const Access& x : all) {
        if (x.event < at) last = x.event;
        if (x.event >= at && !next) next = x.event;
      }
      auto got_last = writes ? LastWrite(*opened_, a, length, Position(at), native)
                             : LastRead(*opened_, a, length, Position(at), native);
      auto got_next = writes ? NextWrite(*opened_, a, length, Position(at), native)
                             : NextRead(*opened_, a, length, Position(at), native);
      ASSERT_TRUE(got_last.ok() && got_next.ok());
      ASSERT_EQ(got_last->has_value(), last.has_value());
      ASSERT_EQ(got_next->has_value(), next.has_value());
      if (last) {
        ASSERT_EQ((*got_last)->event, *last);
        ExpectOneOf(**got_last, all, "last");
      }
      if (next) {
        ASSERT_EQ((*got_next)->event, *next);
        ExpectOneOf(**got_next, all, "next");
      }
    }
    // History over a random window, with a random cap.
    const std::uint64_t from = rng() % (n + 1), to = from + rng() % 400;
    const std::size_t max = rng() % 3 == 0 ? 3 : 1000;
    auto want =
        testing::NaiveAccesses(*oracle_, a, a + length, from, to, true, trace_.records_reads);
    if (want.size() > max) want.resize(max);
    auto got = History(*opened_, a, length, Position(from), Position(to), max, native);
    ASSERT_TRUE(got.ok()) << got.status().ToString();
    ASSERT_EQ(got->size(), want.size());
    for (std::size_t j = 0; j < want.size(); ++j) {
      EXPECT_EQ((*got)[j].event, want[j].event);
      EXPECT_EQ((*got)[j].is_write, want[j].is_write);
      EXPECT_EQ((*got)[j].address, want[j].address);
      EXPECT_EQ((*got)[j].data, want[j].data);
      EXPECT_EQ((*got)[j].thread, want[j].thread);
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Fake, SearchCrossCheck, ::testing::ValuesIn(testing::CrossCheckConfigs()),
                         [](const auto& param_info) { return param_info.param.name; });

class SearchTest : public ::testing::Test {
 protected:
  void SetUp() override {
    testing::FakeTraceOptions o;
    o.events = 3000;
    fake_ = testing::GenerateFakeTrace(o);
    trace_ = *testing::OpenFakeInMemory(fake_);
  }
  FakeTrace fake_;
  std::shared_ptr<Trace> trace_;
};

TEST_F(SearchTest, EndsAndErrors) {
  const std::uint64_t n = fake_.events.size();
  StopCondition none;
  auto end = RunUntil(*trace_, Position(5), Direction::kForward, none);
  ASSERT_TRUE(end.ok());
  EXPECT_EQ(end->reason, StopEvent::Reason::kHistoryEnd);
  EXPECT_EQ(end->position.value, n);
  auto begin = RunUntil(*trace_, Position(5), Direction::kBackward, none);
  ASSERT_TRUE(begin.ok());
  EXPECT_EQ(begin->reason, StopEvent::Reason::kHistoryBegin);
  EXPECT_EQ(begin->position.value, 0u);
  EXPECT_TRUE(
      RunUntil(*trace_, Position(n + 1), Direction::kForward, none).status().IsOutOfRange());
  StopCondition reads;
  reads.watches.push_back(Watch{0x10000, 4, WatchKind::kRead, false});
  EXPECT_EQ(RunUntil(*trace_, Position(0), Direction::kForward, reads).status().code(),
            StatusCode::kInvalidArgument);
  EXPECT_FALSE(NextRead(*trace_, 0x10000, 4, Position(0)).ok());
}

TEST_F(SearchTest, BreakpointAtStartDoesNotFire) {
  auto cursor = std::move(trace_->NewCursor().value());
  ASSERT_TRUE(cursor->Seek(Position(100)).ok());
  // The pc of event 100's thread in state 100.
  StopCondition c;
  c.breakpoints.push_back(*cursor->Pc(cursor->current_thread()));
  auto fwd = RunUntil(*trace_, Position(100), Direction::kForward, c);
  auto bwd = RunUntil(*trace_, Position(100), Direction::kBackward, c);
  ASSERT_TRUE(fwd.ok() && bwd.ok());
  EXPECT_GT(fwd->position.value, 100u);
  EXPECT_LT(bwd->position.value, 100u);
}

TEST(SearchEmptyTest, EmptyTraceEndsAtOnce) {
  testing::FakeTraceOptions o;
  o.events = 0;
  auto trace = testing::OpenFakeInMemory(testing::GenerateFakeTrace(o));
  ASSERT_TRUE(trace.ok());
  StopCondition c;
  c.breakpoints.push_back(0x401000);
  c.watches.push_back(Watch{0x10000, 8, WatchKind::kWrite, true});
  auto fwd = RunUntil(**trace, Position(0), Direction::kForward, c);
  auto bwd = RunUntil(**trace, Position(0), Direction::kBackward, c);
  ASSERT_TRUE(fwd.ok() && bwd.ok());
  EXPECT_EQ(fwd->reason, StopEvent::Reason::kHistoryEnd);
  EXPECT_EQ(bwd->reason, StopEvent::Reason::kHistoryBegin);
  auto last = LastWrite(**trace, 0x10000, 8, Position(0));
  ASSERT_TRUE(last.ok());
  EXPECT_FALSE(last->has_value());
}

TEST_F(SearchTest, InterruptStopsWhereTheSearchWas) {
  std::atomic<bool> flag{true};
  StopCondition c;
  c.breakpoints.push_back(0x401000);
  c.interrupt = &flag;
  auto stop = RunUntil(*trace_, Position(42), Direction::kForward, c);
  ASSERT_TRUE(stop.ok());
  EXPECT_EQ(stop->reason, StopEvent::Reason::kInterrupted);
  EXPECT_EQ(stop->position.value, 42u);
}

}  // namespace
}  // namespace backstep::core
