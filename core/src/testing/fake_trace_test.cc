#include "backstep/testing/fake_trace.h"

#include <gtest/gtest.h>

#include <cstring>

#include "backstep/testing/fake_trace_generator.h"
#include "testing/trace_oracle.h"

namespace backstep::core::testing {
namespace {

void ExpectSameEvent(const FakeEvent& want, const Event& got) {
  EXPECT_EQ(want.thread, got.thread);
  EXPECT_EQ(want.kind, got.kind);
  EXPECT_EQ(want.flags, got.flags);
  EXPECT_EQ(want.description, got.description);
  ASSERT_EQ(want.registers.size(), got.registers.size());
  for (std::size_t i = 0; i < want.registers.size(); ++i) {
    EXPECT_EQ(want.registers[i].reg, got.registers[i].reg);
    EXPECT_EQ(want.registers[i].op, got.registers[i].op);
    const auto size = X86_64().info(want.registers[i].reg).size;
    EXPECT_EQ(0, std::memcmp(want.registers[i].value, got.registers[i].value, size));
  }
  for (auto [w, g] : {std::pair{&want.writes, &got.writes}, std::pair{&want.reads, &got.reads}}) {
    ASSERT_EQ(w->size(), g->size());
    for (std::size_t i = 0; i < w->size(); ++i) {
      EXPECT_EQ((*w)[i].address, (*g)[i].address);
      EXPECT_EQ((*w)[i].data, std::vector<std::uint8_t>((*g)[i].data.begin(), (*g)[i].data.end()));
    }
  }
}

TEST(FakeTraceTest, RoundTripAndResume) {
  FakeTraceOptions o;
  o.events = 500;
  o.threads = 3;
  o.records_reads = true;
  o.clears = true;
  o.full_image = false;
  o.full_registers = false;
  const FakeTrace trace = GenerateFakeTrace(o);
  auto reader = OpenFakeTrace(FakeTraceSource(trace));
  ASSERT_TRUE(reader.ok()) << reader.status().ToString();
  TraceReader& r = **reader;
  EXPECT_EQ(r.header().format, kFakeFormatName);
  EXPECT_TRUE(r.header().records_reads);
  EXPECT_EQ(r.InitialRegisters().size(), trace.initial_registers.size());
  std::vector<ReaderPosition> positions;
  Event e;
  for (const FakeEvent& want : trace.events) {
    positions.push_back(r.Tell());
    auto more = r.Next(&e);
    ASSERT_TRUE(more.ok() && *more);
    ExpectSameEvent(want, e);
  }
  auto end = r.Next(&e);
  ASSERT_TRUE(end.ok());
  EXPECT_FALSE(*end);
  for (std::size_t i : {250u, 0u, 499u, 17u}) {
    ASSERT_TRUE(r.Seek(positions[i]).ok());
    auto more = r.Next(&e);
    ASSERT_TRUE(more.ok() && *more);
    ExpectSameEvent(trace.events[i], e);
  }
  // The image reads back with its known mask.
  const FakeImageRegion& region = trace.image.front();
  std::vector<std::uint8_t> out(region.bytes.size() + 8), known(out.size());
  r.ReadInitialMemory(region.start - 4, out, known);
  for (std::size_t i = 0; i < region.bytes.size(); ++i) {
    EXPECT_EQ(known[i + 4], region.known[i]);
    if (region.known[i]) {
      EXPECT_EQ(out[i + 4], region.bytes[i]);
    }
  }
  EXPECT_EQ(known[0], 0);
}

TEST(FakeTraceTest, TruncatedIsCorruption) {
  FakeTraceOptions o;
  o.events = 20;
  std::vector<std::uint8_t> bytes = SerializeFakeTrace(GenerateFakeTrace(o));
  bytes.resize(bytes.size() - 3);
  auto reader = OpenFakeTrace(MemorySource(bytes));
  ASSERT_TRUE(reader.ok());
  Event e;
  Status last;
  for (;;) {
    auto more = (*reader)->Next(&e);
    if (!more.ok()) {
      last = more.status();
      break;
    }
    ASSERT_TRUE(*more) << "truncation not detected";
  }
  EXPECT_TRUE(last.IsCorruption()) << last.ToString();
}

// Value inference: a byte unknown in the image is known back to the
// previous write or clear from a later read, and not across a write.
TEST(TraceOracleTest, ValueInference) {
  FakeTrace t;
  t.initial_registers.emplace_back(ThreadId(1), RegisterFile(X86_64()));
  auto event = [&](std::vector<FakeAccess> writes, std::vector<FakeAccess> reads,
                   std::uint32_t flags = 0) {
    FakeEvent e;
    e.thread = ThreadId(1);
    e.writes = std::move(writes);
    e.reads = std::move(reads);
    e.flags = flags;
    t.events.push_back(std::move(e));
  };
  event({}, {});                      // 0
  event({}, {{0x100, {7}}});          // 1: reads 7
  event({{0x100, {8}}}, {});          // 2: writes 8
  event({}, {});                      // 3
  event({}, {}, kEventClearsMemory);  // 4: clear
  event({}, {{0x100, {8}}});          // 5: reads 8
  TraceOracle oracle(t);
  const std::optional<std::uint8_t> want[] = {7, 7, 7, 8, 8, 8, 8};
  for (std::uint64_t p = 0; p <= 6; ++p) {
    oracle.Seek(p);
    EXPECT_EQ(oracle.Byte(0x100), want[p]) << "position " << p;
  }
  oracle.Seek(3);
  EXPECT_EQ(oracle.Byte(0x101), std::nullopt);
}

}  // namespace
}  // namespace backstep::core::testing
