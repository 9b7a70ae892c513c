// The pc index's encoding (index format versions 5 and 6): followers,
// grouped pc entries and runs of equal deltas, on crafted pc sequences whose answers a scan gives.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <random>

#include "backstep/testing/fake_trace.h"
#include "index/index_sink.h"
#include "index/pc_index_builder.h"
#include "index/pc_table.h"
#include "index/trace_index.h"
#include "replay/trace_index_of.h"

namespace backstep::core {
namespace {

constexpr Address kStraight = 0x10000;  // straight-line code, each pc once
constexpr Address kLoop = 0x20000;      // loop bodies
constexpr Address kOther = 0x30000;

// The pcs of events 0, 1, ...: every case the encoding distinguishes.
std::vector<Address> CraftedPcs() {
  std::vector<Address> pcs;
  auto body = [&](Address base, int length, int times) {
    for (int t = 0; t < times; ++t) {
      for (int i = 0; i < length; ++i) pcs.push_back(base + 4 * i);
    }
  };
  body(kStraight, 300, 1);        // executed once: followers of the first
  body(kLoop, 3, 128);            // exactly one block of postings
  body(kLoop + 0x100, 3, 129);    // one more: a skip table
  body(kLoop + 0x200, 2, 127);    // one fewer
  body(kLoop + 0x300, 4, 300);    // several blocks
  for (int i = 0; i < 40; ++i) {  // jumps into the middle: +0x404 leads
    if (i % 7) pcs.push_back(kLoop + 0x400);
    pcs.push_back(kLoop + 0x404);
    pcs.push_back(kLoop + 0x408);
  }
  for (int i = 0; i < 50; ++i) {  // +0x504 always after +0x500, which runs more
    pcs.push_back(kLoop + 0x500);
    if (i % 5) pcs.push_back(kLoop + 0x504);
  }
  for (int i = 0; i < 200; ++i) pcs.push_back(kOther);  // a pc repeated in place
  std::mt19937_64 rng(7);  // deltas that do not repeat, pcs that follow nothing
  for (int i = 0; i < 3000; ++i) pcs.push_back(kOther + 0x100 + 4 * (rng() % 37));
  body(kStraight, 300, 2);  // the straight code again: still followers
  return pcs;
}

testing::FakeTrace TraceOf(const std::vector<Address>& pcs) {
  const ArchDescription& arch = X86_64();
  testing::FakeTrace t;
  RegisterFile regs(arch);
  regs.SetU64(arch.pc(), pcs[0]);
  t.initial_registers.emplace_back(ThreadId{100}, regs);
  for (std::size_t i = 0; i < pcs.size(); ++i) {
    testing::FakeEvent e;
    e.thread = ThreadId{100};
    RegisterWrite w;
    w.reg = arch.pc();
    const std::uint64_t next = i + 1 < pcs.size() ? pcs[i + 1] : pcs[i] + 4;
    std::memcpy(w.value, &next, sizeof next);
    e.registers.push_back(w);
    t.events.push_back(std::move(e));
  }
  return t;
}

// Every query, at positions around every posting of every pc, against a
// scan of `pcs`; with one segment and with segments cut inside loops.
TEST(PcEncodingTest, CraftedSequencesAnswerAsAScan) {
  const std::vector<Address> pcs = CraftedPcs();
  const std::uint64_t n = pcs.size();
  std::vector<Address> distinct(pcs);
  std::sort(distinct.begin(), distinct.end());
  distinct.erase(std::unique(distinct.begin(), distinct.end()), distinct.end());
  for (const std::uint64_t budget : {std::uint64_t(0), std::uint64_t(3000)}) {
    OpenOptions options;
    if (budget) options.index_memory_budget = budget;
    auto trace = testing::OpenFakeInMemory(TraceOf(pcs), options);
    ASSERT_TRUE(trace.ok()) << trace.status().ToString();
    const TraceIndex& index = TraceIndexOf(**trace);
    std::mt19937_64 rng(budget);
    for (const Address pc : distinct) {
      std::vector<std::uint64_t> at;  // the pc's postings
      for (std::uint64_t e = 0; e < n; ++e) {
        if (pcs[e] == pc) at.push_back(e);
      }
      std::vector<std::uint64_t> probes = {0, n};
      for (std::uint64_t e : at) probes.insert(probes.end(), {e, e + 1, e > 0 ? e - 1 : 0});
      if (probes.size() > 120) {  // hot pcs: a sample
        std::shuffle(probes.begin() + 2, probes.end(), rng);
        probes.resize(120);
      }
      for (std::uint64_t q : probes) {
        const auto next = std::lower_bound(at.begin(), at.end(), q);
        const std::optional<std::uint64_t> want_next =
            next == at.end() ? std::nullopt : std::optional(*next);
        const std::optional<std::uint64_t> want_prev =
            next == at.begin() ? std::nullopt : std::optional(*(next - 1));
        ASSERT_EQ(index.NextPc(pc, q), want_next) << std::hex << pc << std::dec << " at " << q;
        ASSERT_EQ(index.PrevPc(pc, q), want_prev) << std::hex << pc << std::dec << " at " << q;
        const std::uint64_t to = q + rng() % 700;
        const auto count = std::lower_bound(at.begin(), at.end(), to) - next;
        ASSERT_EQ(index.CountPc(pc, q, to), static_cast<std::uint64_t>(std::max<long>(count, 0)))
            << std::hex << pc << std::dec << " in [" << q << ", " << to << ")";
      }
    }
    for (int i = 0; i < 300; ++i) {  // ranges over followers and leaders
      const std::uint64_t q = rng() % (n + 1);
      const Address lo = distinct[rng() % distinct.size()];
      const Address hi = lo + 4 * (rng() % 12);
      std::optional<std::uint64_t> want;
      for (std::uint64_t e = q; e < n && !want; ++e) {
        if (pcs[e] >= lo && pcs[e] <= hi) want = e;
      }
      ASSERT_EQ(index.NextPcInRange(lo, hi, q), want) << std::hex << lo << "-" << hi;
    }
  }
}

// The builder's table: which pcs are followers, of whom, and what a pc
// executed once costs.
TEST(PcEncodingTest, FollowersAndEntrySize) {
  const std::vector<Address> pcs = CraftedPcs();
  PcIndexBuilder builder;
  for (std::uint64_t e = 0; e < pcs.size(); ++e) builder.Add(pcs[e], e);
  VectorIndexSink sink;
  const auto [offset, count] = builder.Flush(sink);
  std::vector<std::uint8_t>& bytes = sink.bytes();
  SegmentRecord seg{};
  seg.pcs_offset = offset;
  seg.pc_count = count;
  const std::uint64_t groups = (count + kPcsPerGroup - 1) / kPcsPerGroup;
  ASSERT_EQ(bytes.size(), offset + groups * sizeof(PcGroupRecord));
  const PcTable table(bytes.data(), bytes.data() + bytes.size(), seg);
  using Lead = std::pair<Address, std::uint64_t>;  // (leader, shift); (0, 0): none
  auto follower_of = [&](Address pc) -> Lead {
    const auto rec = table.Find(pc);
    EXPECT_TRUE(rec) << std::hex << pc;
    if (!rec || !IsFollower(*rec)) return {0, 0};
    return {table.at(rec->skips_offset).pc, FollowerShift(*rec)};
  };
  EXPECT_EQ(follower_of(kStraight), (Lead{0, 0}));
  EXPECT_EQ(follower_of(kStraight + 4 * 299), (Lead{kStraight, 299}));
  EXPECT_EQ(follower_of(kLoop + 0x108), (Lead{kLoop + 0x100, 2}));
  EXPECT_EQ(follower_of(kLoop + 0x30c), (Lead{kLoop + 0x300, 3}));
  EXPECT_EQ(follower_of(kLoop + 0x404), (Lead{0, 0}));
  EXPECT_EQ(follower_of(kLoop + 0x408), (Lead{kLoop + 0x404, 1}));
  EXPECT_EQ(follower_of(kLoop + 0x504), (Lead{0, 0}));
  EXPECT_EQ(follower_of(kOther), (Lead{0, 0}));
  EXPECT_FALSE(table.Find(kStraight + 2));
  EXPECT_FALSE(table.Find(kOther + 0x100 + 4 * 37));
  // Sorted, every pc once.
  std::uint64_t seen = 0;
  Address last = 0;
  table.ForEachFrom(0, [&](const PcRecord& rec) {
    EXPECT_TRUE(seen == 0 || rec.pc > last);
    last = rec.pc;
    ++seen;
    return true;
  });
  EXPECT_EQ(seen, count);

  // 300 straight-line pcs executed three times: a few bytes each (a
  // record of version 4 took 32 bytes).
  PcIndexBuilder straight;
  for (std::uint64_t e = 0; e < 900; ++e) straight.Add(kStraight + 4 * (e % 300), e + 1000000);
  VectorIndexSink straight_sink;
  straight.Flush(straight_sink);
  EXPECT_LE(straight_sink.bytes().size(), 300u * 7);
}

// A loop's leader executed with one period (here 200 events, a 2-byte
// delta) 1,000 times: its deltas are runs (version 6), a few bytes per
// block of 128 (version 5: 2 bytes per posting). A period that changes now
// and then still answers as a scan (CraftedSequencesAnswerAsAScan covers
// runs across blocks and segments).
TEST(PcEncodingTest, PeriodicPostingsAreRuns) {
  PcIndexBuilder builder;
  std::vector<std::uint64_t> at;
  std::uint64_t e = 5;
  for (int i = 0; i < 1000; ++i) {
    at.push_back(e);
    builder.Add(kLoop, e);
    e += i % 300 == 299 ? 7 : i % 97 == 0 ? 3 : 200;
  }
  VectorIndexSink sink;
  const auto [offset, count] = builder.Flush(sink);
  ASSERT_EQ(count, 1u);
  EXPECT_LE(offset, 8u * 16 + 32 + 8 * 20) << "version 5: ~2,000 bytes";
  SegmentRecord seg{};
  seg.pcs_offset = offset;
  seg.pc_count = count;
  std::vector<std::uint8_t>& bytes = sink.bytes();
  const PcTable table(bytes.data(), bytes.data() + bytes.size(), seg);
  const auto rec = table.Find(kLoop);
  ASSERT_TRUE(rec);
  ASSERT_EQ(rec->count, at.size());
  // Every posting back, block by block.
  std::size_t k = 0;
  for (std::uint64_t b = 0; b < (at.size() + 127) / 128; ++b) {
    const auto skip = LoadRecord<SkipRecord>(bytes.data() + rec->skips_offset + 16 * b);
    ASSERT_EQ(skip.first_event, at[k++]);
    PostingDeltas deltas{bytes.data() + rec->data_offset + skip.data_rel,
                         bytes.data() + bytes.size()};
    std::uint64_t value = skip.first_event;
    for (int j = 1; j < 128 && k < at.size(); ++j) {
      value += deltas.Next();
      ASSERT_EQ(value, at[k++]) << "posting " << k - 1;
    }
  }
}

}  // namespace
}  // namespace backstep::core
