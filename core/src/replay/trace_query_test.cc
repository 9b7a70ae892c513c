// The public index queries (trace_query.h) against a naive scan of a
// generated multi-thread trace.
#include "backstep/core/trace_query.h"

#include <gtest/gtest.h>

#include <optional>

#include "backstep/core/cursor.h"
#include "backstep/testing/fake_trace.h"
#include "backstep/testing/fake_trace_generator.h"

namespace backstep::core {
namespace {

class TraceQuery : public ::testing::Test {
 protected:
  void SetUp() override {
    testing::FakeTraceOptions options;
    options.seed = 9;
    options.events = 700;
    options.threads = 3;
    fake_ = testing::GenerateFakeTrace(options);
    OpenOptions open;
    open.keyframe_interval = 64;
    auto trace = testing::OpenFakeInMemory(fake_, open);
    ASSERT_TRUE(trace.ok()) << trace.status().ToString();
    trace_ = *trace;
  }

  std::optional<std::uint64_t> NaiveNext(ThreadId t, std::uint64_t from) const {
    for (std::uint64_t e = from; e < fake_.events.size(); ++e) {
      if (fake_.events[e].thread == t) return e;
    }
    return std::nullopt;
  }
  std::optional<std::uint64_t> NaivePrev(ThreadId t, std::uint64_t before) const {
    for (std::uint64_t e = std::min<std::uint64_t>(before, fake_.events.size()); e-- > 0;) {
      if (fake_.events[e].thread == t) return e;
    }
    return std::nullopt;
  }

  testing::FakeTrace fake_;
  std::shared_ptr<Trace> trace_;
};

TEST_F(TraceQuery, KeyframeIntervalIsTheOpenedOne) { EXPECT_EQ(KeyframeInterval(*trace_), 64u); }

TEST_F(TraceQuery, ThreadStepsMatchANaiveScan) {
  ASSERT_EQ(trace_->threads().size(), 3u);
  for (ThreadId t : trace_->threads()) {
    for (std::uint64_t p = 0; p <= fake_.events.size() + 1; ++p) {
      ASSERT_EQ(NextEventOfThread(*trace_, t, p), NaiveNext(t, p)) << t.value << " from " << p;
      ASSERT_EQ(PrevEventOfThread(*trace_, t, p), NaivePrev(t, p)) << t.value << " before " << p;
    }
  }
  EXPECT_EQ(NextEventOfThread(*trace_, ThreadId(999), 0), std::nullopt);
  EXPECT_EQ(PrevEventOfThread(*trace_, ThreadId(999), 700), std::nullopt);
}

TEST_F(TraceQuery, PcLookupsMatchTheCursor) {
  auto cursor = trace_->NewCursor();
  ASSERT_TRUE(cursor.ok());
  // The pc before each instruction or frame event, from the cursor.
  std::vector<std::optional<Address>> pcs(fake_.events.size());
  for (std::uint64_t e = 0; e < fake_.events.size(); ++e) {
    const EventKind kind = fake_.events[e].kind;
    if (kind == EventKind::kInstruction || kind == EventKind::kFrame) {
      ASSERT_TRUE((*cursor)->Seek(Position(e)).ok());
      pcs[e] = (*cursor)->Pc(fake_.events[e].thread);
    }
  }
  const std::vector<Address> pool = testing::FakePcPool();
  ASSERT_GE(pool.size(), 2u);
  const Address lo = std::min(pool[0], pool[1]), hi = std::max(pool[0], pool[1]);
  std::size_t hits = 0;
  for (std::uint64_t from = 0; from <= fake_.events.size(); from += 7) {
    std::optional<std::uint64_t> want;
    for (std::uint64_t e = from; e < fake_.events.size() && !want; ++e) {
      if (pcs[e] && *pcs[e] >= lo && *pcs[e] <= hi) want = e;
    }
    hits += want.has_value();
    ASSERT_EQ(NextEventWithPcIn(*trace_, lo, hi, from), want) << "from " << from;
  }
  EXPECT_GT(hits, 0u);
}

}  // namespace
}  // namespace backstep::core
