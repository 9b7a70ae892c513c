// Cross-check over a BAP trace (3 threads, recorded reads, partial state,
// written by BapTraceWriter from a generated trace and read by BapReader):
// the cursor's registers of every thread and its memory (with value
// inference from the reads) at random positions equal the naive replay of
// the same reader's events, with default and with tiny index tuning.
#include <gtest/gtest.h>

#include <random>

#include "backstep/core/cursor.h"
#include "backstep/core/trace.h"
#include "backstep/testing/fake_trace.h"
#include "backstep/testing/fake_trace_generator.h"
#include "formats/bap/bap_reader.h"
#include "formats/bap/bap_test_util.h"
#include "formats/bap/bap_trace_writer.h"
#include "testing/cross_check.h"
#include "testing/trace_oracle.h"

namespace backstep::core {
namespace {

std::vector<std::uint8_t> BapOf(const testing::FakeTrace& fake) {
  auto source = testing::OpenFakeTrace(testing::FakeTraceSource(fake));
  EXPECT_TRUE(source.ok());
  auto out = BapTraceWriter::InMemory();
  auto n = ConvertTrace(**source, *out, "x.frames");
  EXPECT_TRUE(n.ok()) << n.status().ToString();
  return out->bytes();
}

TEST(BapCrossCheck, CursorMatchesNaiveReplay) {
  for (const testing::CrossCheckConfig& config : testing::CrossCheckConfigs()) {
    if (config.trace.address_kind != AddressKind::kVirtual || config.trace.clears) continue;
    SCOPED_TRACE(config.name);
    testing::FakeTraceOptions o = config.trace;
    o.records_reads = true;
    const std::vector<std::uint8_t> bytes =
        BapOf(bap_test::BapConvertible(testing::GenerateFakeTrace(o)));
    const auto source = MemorySource(bytes, "cross.frames");
    ReaderFactory factory = [source]() -> Expected<std::unique_ptr<TraceReader>> {
      BACKSTEP_ASSIGN_OR_RETURN(auto r, BapReader::Open(source));
      return std::unique_ptr<TraceReader>(std::move(r));
    };
    auto trace = Trace::OpenWith(factory, "", config.open);
    ASSERT_TRUE(trace.ok()) << trace.status().ToString();
    auto reader = factory();
    ASSERT_TRUE(reader.ok());
    auto fake = testing::CaptureTrace(**reader);
    ASSERT_TRUE(fake.ok()) << fake.status().ToString();
    testing::TraceOracle oracle(*fake);
    ASSERT_EQ((*trace)->event_count(), fake->events.size());
    ASSERT_EQ(oracle.all_threads().size(), static_cast<std::size_t>(o.threads));
    auto cursor = (*trace)->NewCursor();
    ASSERT_TRUE(cursor.ok());
    std::mt19937_64 rng(5);
    const std::uint64_t n = (*trace)->event_count();
    const auto regions = testing::FakeDataRegions(AddressKind::kVirtual);
    std::uint64_t known = 0;
    for (int i = 0; i < 40; ++i) {
      const std::uint64_t p = i == 0 ? n : rng() % (n + 1);
      ASSERT_TRUE((*cursor)->Seek(Position(p)).ok());
      oracle.Seek(p);
      for (ThreadId t : oracle.all_threads()) {
        auto regs = (*cursor)->Registers(t);
        ASSERT_TRUE(regs.ok()) << regs.status().ToString();
        ASSERT_TRUE(**regs == *oracle.Registers(t)) << "position " << p << " thread " << t.value;
      }
      for (const auto& [lo, hi] : regions) {
        const Address a = lo + rng() % (hi - lo - 256);
        std::uint8_t v[256], k[256];
        ASSERT_TRUE((*cursor)->ReadMemory(a, v, k).ok());
        for (int j = 0; j < 256; ++j) {
          const auto want = oracle.Byte(a + j);
          ASSERT_EQ(k[j] != 0, want.has_value()) << "position " << p << " " << std::hex << a + j;
          if (want) {
            ++known;
            ASSERT_EQ(v[j], *want) << "position " << p << " " << std::hex << a + j;
          }
        }
      }
    }
    EXPECT_GT(known, 0u);
  }
}

}  // namespace
}  // namespace backstep::core
