#include "replay/replay_cursor.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <random>
#include <thread>

#include "backstep/testing/fake_trace.h"
#include "testing/cross_check.h"
#include "testing/trace_oracle.h"

namespace backstep::core {
namespace {

using testing::CrossCheckConfig;
using testing::FakeTrace;
using testing::TraceOracle;

class CursorCrossCheck : public ::testing::TestWithParam<CrossCheckConfig> {
 protected:
  void SetUp() override {
    trace_ = testing::GenerateFakeTrace(GetParam().trace);
    auto opened = testing::OpenFakeInMemory(trace_, GetParam().open);
    ASSERT_TRUE(opened.ok()) << opened.status().ToString();
    opened_ = *opened;
    oracle_ = std::make_unique<TraceOracle>(trace_);
    auto cursor = opened_->NewCursor();
    ASSERT_TRUE(cursor.ok()) << cursor.status().ToString();
    cursor_ = std::move(*cursor);
  }

  void ExpectRegisters(std::uint64_t p) {
    ASSERT_EQ(cursor_->position().value, p);
    EXPECT_EQ(cursor_->current_thread(), oracle_->current_thread()) << "position " << p;
    EXPECT_EQ(cursor_->threads(), oracle_->threads()) << "position " << p;
    for (ThreadId t : oracle_->all_threads()) {
      auto regs = cursor_->Registers(t);
      ASSERT_TRUE(regs.ok());
      EXPECT_TRUE(**regs == *oracle_->Registers(t)) << "thread " << t.value << " position " << p;
      const RegisterFile& want = *oracle_->Registers(t);
      const RegisterId pc = X86_64().pc();
      EXPECT_EQ(cursor_->Pc(t),
                want.known(pc) ? std::optional<Address>(want.u64(pc)) : std::nullopt);
    }
  }

  // Compares [native, native + length) read through `address` of `kind`.
  void ExpectMemory(Address address, Address native, std::size_t length, AddressKind kind) {
    std::vector<std::uint8_t> out(length), known(length);
    ASSERT_TRUE(cursor_->ReadMemory(address, out, known, kind).ok());
    for (std::size_t i = 0; i < length; ++i) {
      const std::optional<std::uint8_t> want = oracle_->Byte(native + i);
      ASSERT_EQ(known[i] != 0, want.has_value())
          << "byte " << std::hex << native + i << " at position " << std::dec
          << oracle_->position();
      ASSERT_EQ(out[i], want.value_or(0)) << "byte " << std::hex << native + i;
    }
  }

  void ExpectState(std::uint64_t p, std::mt19937_64& rng) {
    ExpectRegisters(p);
    const AddressKind native_kind = trace_.address_kind;
    const auto regions = testing::FakeDataRegions(native_kind);
    // The hot page's first bytes, then random windows of every region.
    ExpectMemory(regions[0].first, regions[0].first, 600, native_kind);
    for (const auto& [lo, hi] : regions) {
      const Address a = lo + rng() % (hi - lo - 200);
      ExpectMemory(a, a, 200, native_kind);
    }
    if (native_kind == AddressKind::kPhysical) {
      // Virtual reads through the page walk: the identity map and the
      // 4 KiB-mapped pages (crossing a page boundary).
      const Address ident = regions[0].first + 4000;
      ExpectMemory(ident, ident, 300, AddressKind::kVirtual);
      const Address va = testing::kMappedVirtual + 4096 - 100;
      ExpectMemory(va, *testing::FakeTranslate(va), 300, AddressKind::kVirtual);
      std::vector<std::uint8_t> out(16), known(16);
      ASSERT_TRUE(cursor_->ReadMemory(0x7f0000000000, out, known).ok());
      EXPECT_EQ(std::count(known.begin(), known.end(), 0), 16) << "unmapped page";
    }
  }

  FakeTrace trace_;
  std::shared_ptr<Trace> opened_;
  std::unique_ptr<TraceOracle> oracle_;
  std::unique_ptr<Cursor> cursor_;
};

TEST_P(CursorCrossCheck, RandomSeeks) {
  std::mt19937_64 rng(GetParam().trace.seed);
  const std::uint64_t n = trace_.events.size();
  ASSERT_EQ(opened_->event_count(), n);
  std::vector<std::uint64_t> positions = {0, n, n - 1, 1};
  for (int i = 0; i < 30; ++i) positions.push_back(rng() % (n + 1));
  for (std::uint64_t p : positions) {
    ASSERT_TRUE(cursor_->Seek(Position(p)).ok());
    oracle_->Seek(p);
    ExpectState(p, rng);
  }
  EXPECT_TRUE(cursor_->Seek(Position(n + 1)).IsOutOfRange());
}

TEST_P(CursorCrossCheck, StepsBothWays) {
  std::mt19937_64 rng(GetParam().trace.seed + 1);
  const std::uint64_t n = trace_.events.size();
  const std::uint64_t start = n / 3 + rng() % 50;
  ASSERT_TRUE(cursor_->Seek(Position(start)).ok());
  // Forward, across keyframes, checking registers and the current event.
  for (std::uint64_t p = start; p < start + 120; ++p) {
    oracle_->Seek(p);
    ExpectRegisters(p);
    auto e = cursor_->CurrentEvent();
    ASSERT_TRUE(e.ok());
    EXPECT_EQ((*e)->thread, trace_.events[p].thread);
    EXPECT_EQ((*e)->writes.size(), trace_.events[p].writes.size());
    ASSERT_TRUE(cursor_->StepForward().ok());
  }
  // Backward over the same stretch and beyond the journal.
  for (std::uint64_t p = start + 120; p-- > start - 100;) {
    ASSERT_TRUE(cursor_->StepBackward().ok());
    oracle_->Seek(p);
    ExpectRegisters(p);
    if (p % 7 == 0) ExpectState(p, rng);
  }
  // Mixed short hops.
  for (int i = 0; i < 40; ++i) {
    const std::uint64_t p = std::min<std::uint64_t>(n, start + rng() % 200);
    ASSERT_TRUE(cursor_->Seek(Position(p)).ok());
    oracle_->Seek(p);
    ExpectRegisters(p);
  }
}

// The page cache and the journal under a random walk: runs of steps in
// both directions (across keyframes and, on multi-thread traces, threads),
// short seeks, and reads of the same hot pages at every position (so cached
// pages are patched and restored, never re-read) plus reads of other pages
// in the middle of a journaled window (loaded late). Every position is
// checked against the oracle, i.e. what a fresh seek sees.
TEST_P(CursorCrossCheck, RandomWalkWithCachedPages) {
  std::mt19937_64 rng(GetParam().trace.seed + 2);
  const std::uint64_t n = trace_.events.size();
  const AddressKind native_kind = trace_.address_kind;
  const auto regions = testing::FakeDataRegions(native_kind);
  std::uint64_t p = n / 2 + rng() % 40;
  ASSERT_TRUE(cursor_->Seek(Position(p)).ok());
  for (int move = 0; move < 400; ++move) {
    const int kind = static_cast<int>(rng() % 10);
    if (kind < 4) {  // a run of backward steps
      for (int i = static_cast<int>(rng() % 60); i > 0 && p > 0; --i, --p) {
        ASSERT_TRUE(cursor_->StepBackward().ok());
      }
    } else if (kind < 8) {  // a run of forward steps
      for (int i = static_cast<int>(rng() % 60); i > 0 && p < n; --i, ++p) {
        ASSERT_TRUE(cursor_->StepForward().ok());
      }
    } else {  // a short seek either way
      const std::uint64_t lo = p > 80 ? p - 80 : 0;
      p = std::min<std::uint64_t>(n, lo + rng() % 160);
      ASSERT_TRUE(cursor_->Seek(Position(p)).ok());
    }
    oracle_->Seek(p);
    ExpectRegisters(p);
    // The hot page every time; another page now and then.
    ExpectMemory(regions[0].first + 64, regions[0].first + 64, 256, native_kind);
    if (move % 3 == 0) {
      const auto& [lo, hi] = regions[rng() % regions.size()];
      const Address a = lo + rng() % (hi - lo - 64);
      ExpectMemory(a, a, 64, native_kind);
    }
    if (native_kind == AddressKind::kPhysical && move % 5 == 0) {
      const Address va = testing::kMappedVirtual + 4096 - 32;
      ExpectMemory(va, *testing::FakeTranslate(va), 64, AddressKind::kVirtual);
    }
    if (HasFatalFailure()) return;
  }
}

TEST_P(CursorCrossCheck, Ends) {
  const std::uint64_t n = trace_.events.size();
  EXPECT_TRUE(cursor_->StepBackward().IsOutOfRange());
  EXPECT_EQ(cursor_->position().value, 0u);
  ASSERT_TRUE(cursor_->Seek(Position(n)).ok());
  EXPECT_TRUE(cursor_->StepForward().IsOutOfRange());
  EXPECT_TRUE(cursor_->CurrentEvent().status().IsNotFound());
  EXPECT_EQ(cursor_->current_thread(), trace_.events.back().thread);
  ASSERT_TRUE(cursor_->StepBackward().ok());
  oracle_->Seek(n - 1);
  ExpectRegisters(n - 1);
}

INSTANTIATE_TEST_SUITE_P(Fake, CursorCrossCheck, ::testing::ValuesIn(testing::CrossCheckConfigs()),
                         [](const auto& param_info) { return param_info.param.name; });

TEST(ReplayCursorTest, UnknownThreadIsNotFound) {
  testing::FakeTraceOptions o;
  o.events = 10;
  auto trace = testing::OpenFakeInMemory(testing::GenerateFakeTrace(o));
  ASSERT_TRUE(trace.ok());
  auto cursor = (*trace)->NewCursor();
  ASSERT_TRUE(cursor.ok());
  EXPECT_TRUE((*cursor)->Registers(ThreadId(999)).status().IsNotFound());
  EXPECT_EQ((*cursor)->Pc(ThreadId(999)), std::nullopt);
  std::uint8_t b[4], k[4];
  EXPECT_TRUE((*cursor)->ReadMemory(0x10000, b, k, AddressKind::kPhysical).IsUnsupported());
}

TEST(ReplayCursorTest, CursorsAreIndependentAcrossThreads) {
  testing::FakeTraceOptions o;
  o.events = 800;
  o.threads = 2;
  const FakeTrace fake = testing::GenerateFakeTrace(o);
  auto trace = testing::OpenFakeInMemory(fake);
  ASSERT_TRUE(trace.ok());
  std::vector<std::thread> workers;
  std::atomic<int> failures{0};
  for (int w = 0; w < 4; ++w) {
    workers.emplace_back([&, w] {
      auto cursor = (*trace)->NewCursor();
      if (!cursor.ok()) return void(++failures);
      TraceOracle oracle(fake);
      std::mt19937_64 rng(w);
      for (int i = 0; i < 50; ++i) {
        const std::uint64_t p = rng() % 801;
        if (!(*cursor)->Seek(Position(p)).ok()) ++failures;
        oracle.Seek(p);
        for (ThreadId t : oracle.all_threads()) {
          if (!(**(*cursor)->Registers(t) == *oracle.Registers(t))) ++failures;
        }
        std::uint8_t b[64], k[64];
        if (!(*cursor)->ReadMemory(0x10000, b, k).ok()) ++failures;
        for (int j = 0; j < 64; ++j) {
          if (oracle.Byte(0x10000 + j) !=
              (k[j] ? std::optional<std::uint8_t>(b[j]) : std::nullopt)) {
            ++failures;
          }
        }
      }
    });
  }
  for (auto& t : workers) t.join();
  EXPECT_EQ(failures.load(), 0);
}

}  // namespace
}  // namespace backstep::core

namespace backstep::core {
namespace {

TEST(ReplayCursorTest, EmptyTrace) {
  testing::FakeTraceOptions o;
  o.events = 0;
  const FakeTrace fake = testing::GenerateFakeTrace(o);
  auto trace = testing::OpenFakeInMemory(fake);
  ASSERT_TRUE(trace.ok()) << trace.status().ToString();
  EXPECT_EQ((*trace)->event_count(), 0u);
  auto cursor = (*trace)->NewCursor();
  ASSERT_TRUE(cursor.ok());
  EXPECT_EQ((*cursor)->current_thread(), fake.initial_registers.front().first);
  EXPECT_TRUE(**(*cursor)->Registers(fake.initial_registers.front().first) ==
              fake.initial_registers.front().second);
  EXPECT_TRUE((*cursor)->StepForward().IsOutOfRange());
  EXPECT_TRUE((*cursor)->CurrentEvent().status().IsNotFound());
  std::uint8_t v[8], k[8];
  ASSERT_TRUE((*cursor)->ReadMemory(0x10000, v, k).ok());
  EXPECT_EQ(k[0], 1);  // the image
}

}  // namespace
}  // namespace backstep::core
