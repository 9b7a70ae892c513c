// The index of an x64dbg trace built in parallel from its full-register
// blocks (X64dbgReader::ResumePoints) with value inference merged across the
// parts (index/index_inference_merge.h), against the single pass and a naive
// replay (testing/trace_oracle.h) of the reader's events.
//
// The trace is the two-thread program (x64dbg_fixtures.h) written by our
// writer, with data accesses added to its instructions in three regions:
//   * read-only bytes, never written: known from the trace's start (value
//     inference back to position 0) to its end;
//   * bytes written only in the first tenth of the trace (the first part)
//     and read until the end (later parts): a read in part k extends the
//     value back to the last write in part 0, not before it;
//   * bytes read and written throughout by both threads, windows unaligned
//     (reads partly of bytes an earlier part knew);
//   * thread B reads thread A's push slot, which x64dbg reports as written
//     (not read) by each PUSH: a read of it in a later part must not make
//     it known before A's first push in part 0.
// Compared at every position with the replay for 3 parts (every 7th and
// around every resume point for 2 and 5; with the single pass at every 5th): memory known/unknown
// and values of every region, registers of every thread; then read/access/write watches in both
// directions, LastWrite/NextWrite and the reads history.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <random>
#include <set>
#include <sstream>

#include "backstep/core/cursor.h"
#include "backstep/core/search.h"
#include "backstep/core/trace.h"
#include "backstep/testing/fake_trace.h"
#include "backstep/testing/sweep.h"
#include "backstep/testing/x64dbg_fixtures.h"
#include "formats/x64dbg/x64dbg_format.h"
#include "testing/naive_search.h"
#include "testing/trace_oracle.h"

namespace backstep::core {
namespace {

namespace fs = std::filesystem;

constexpr Address kReadOnly = 0x500000;  // read, never written
constexpr Address kEarly = 0x510ff0;     // written in the first tenth only (crosses a page)
constexpr Address kMixed = 0x520000;     // read and written throughout
constexpr std::uint64_t kRegionSize = 96;

struct Region {
  Address start;
  std::uint64_t size;
};
const Region kRegions[] = {{kReadOnly, kRegionSize},
                           {kEarly, kRegionSize},
                           {kMixed, kRegionSize},
                           {testing::kX64dbgCounter, 16},
                           {testing::kX64dbgStackA - 32, 48},
                           {testing::kX64dbgStackB - 32, 48}};

// Adds one data access to about half of the instructions (not PUSH/CALL:
// x64dbg moves their last entry to the stack slot).
testing::FakeTrace AddDataAccesses(testing::FakeTrace trace, unsigned w, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::map<Address, std::uint8_t> memory;  // the truth
  auto byte = [&](Address a) -> std::uint8_t& {
    auto [it, inserted] = memory.try_emplace(a, static_cast<std::uint8_t>(a * 0x9d + (a >> 8)));
    return it->second;
  };
  const std::size_t n = trace.events.size();
  bool pushed = false;  // thread A pushed: its slot was first written, not read
  const Address slot = testing::kX64dbgStackA - w;
  for (std::size_t i = 0; i < n; ++i) {
    testing::FakeEvent& e = trace.events[i];
    // The program's own accesses move the truth too.
    struct Apply {
      testing::FakeEvent& e;
      decltype(byte)& at;
      ~Apply() {
        for (const testing::FakeAccess& x : e.writes) {
          for (std::size_t k = 0; k < x.data.size(); ++k) at(x.address + k) = x.data[k];
        }
      }
    } apply{e, byte};
    if (e.kind != EventKind::kInstruction || e.reads.empty()) continue;
    if (X64dbgIsPushOrCall(e.reads[0].data, w == 8)) {
      pushed = true;
      continue;
    }
    if (rng() % 2) continue;
    if (pushed && e.thread.value == testing::kX64dbgThreadB && rng() % 3 == 0) {
      // B reads A's push slot: in a later part this read may come before
      // A's first push there, and must not make the slot known before A's
      // very first push (x64dbg reports a PUSH's slot as a write only).
      testing::FakeAccess read{slot, {}};
      for (unsigned k = 0; k < w; ++k) read.data.push_back(byte(slot + k));
      e.reads.push_back(std::move(read));
      continue;
    }
    const int which = static_cast<int>(rng() % 3);
    const Address base = which == 0 ? kReadOnly : which == 1 ? kEarly : kMixed;
    Address a = base + rng() % (kRegionSize - w);
    if (which != 2) a -= a % w;  // aligned windows; the mixed ones overlap
    const bool write = (which == 1 && i < n / 10 && rng() % 2) || (which == 2 && rng() % 2);
    testing::FakeAccess read{a, {}};
    for (unsigned k = 0; k < w; ++k) read.data.push_back(byte(a + k));
    e.reads.push_back(read);
    if (!write) continue;
    testing::FakeAccess out{a, read.data};
    out.data[rng() % w] ^= static_cast<std::uint8_t>(1 + rng() % 255);  // changes
    e.writes.push_back(std::move(out));  // applied to the truth by `apply`
  }
  return trace;
}

std::string Describe(const Expected<std::optional<Access>>& a) {
  if (!a.ok()) return "error " + a.status().ToString();
  if (!a->has_value()) return "none";
  std::ostringstream out;
  const Access& x = **a;
  out << x.event << " t" << x.thread.value << (x.is_write ? " w " : " r ") << std::hex << x.address;
  for (std::uint8_t b : x.data) out << ' ' << int(b);
  return out.str();
}

class X64dbgParallel : public ::testing::TestWithParam<bool> {
 protected:
  void SetUp() override {
    char name[] = "/tmp/backstep-x64dbg-parallel-XXXXXX";
    dir_ = mkdtemp(name);
  }
  void TearDown() override { fs::remove_all(dir_); }

  static std::shared_ptr<Trace> Open(const std::string& path, unsigned parts) {
    OpenOptions options;
    options.keyframe_interval = 97;
    options.index_block_entries = 4;
    options.index_snapshot_blocks = 3;
    options.index_memory_budget = 30000;
    options.index_parts = parts;
    auto trace = Trace::Open(path, options);
    EXPECT_TRUE(trace.ok()) << trace.status().ToString();
    return trace.ok() ? *trace : nullptr;
  }

  std::string dir_;
};

TEST_P(X64dbgParallel, EveryQueryMatchesSinglePassAndNaiveReplay) {
  const bool i386 = GetParam();
  testing::X64dbgProgramOptions o;
  o.instructions = 3000;
  o.seed = 17;
  o.i386 = i386;
  const unsigned w = i386 ? 4 : 8;
  const testing::FakeTrace program = AddDataAccesses(testing::MakeX64dbgProgram(o), w, 5);
  const std::string single_path = dir_ + "/single.trace", path = dir_ + "/parallel.trace";
  ASSERT_TRUE(testing::WriteX64dbgTrace(program, single_path).ok());
  fs::copy_file(single_path, path);

  std::shared_ptr<Trace> single = Open(single_path, 1);
  ASSERT_TRUE(single);
  ASSERT_EQ(single->index_status().build_parts, 1u);
  auto reader = single->NewReader();
  ASSERT_TRUE(reader.ok());
  auto fake = testing::CaptureTrace(**reader);
  ASSERT_TRUE(fake.ok()) << fake.status().ToString();
  const std::vector<ResumePoint> points = (*reader)->ResumePoints();
  ASSERT_GE(points.size(), 5u);  // blocks 512, 1024, ...
  std::set<std::uint64_t> near_seams;
  for (const ResumePoint& point : points) {
    for (std::uint64_t d = 0; d < 5; ++d) near_seams.insert(point.position.value + d - 2);
  }
  const std::uint64_t n = single->event_count();
  ASSERT_EQ(fake->events.size(), n);

  for (unsigned parts : {2u, 3u, 5u}) {
    SCOPED_TRACE(std::to_string(parts) + " parts");
    fs::remove(path + ".bsidx");
    std::shared_ptr<Trace> parallel = Open(path, parts);
    ASSERT_TRUE(parallel);
    EXPECT_EQ(parallel->index_status().build_parts, parts) << parallel->index_status().build_note;
    ASSERT_EQ(parallel->event_count(), n);
    testing::TraceOracle oracle(*fake);
    auto cs = single->NewCursor();
    auto cp = parallel->NewCursor();
    ASSERT_TRUE(cs.ok() && cp.ok());
    // Every position: memory of every region, registers of every thread.
    std::uint64_t known_bytes = 0, inferred_early = 0, checked = 0;
    // (The single pass, itself checked against the replay, every 5th.)
    for (std::uint64_t p = 0; p <= n; ++p) {
      // Every position with 3 parts (every kSweepStride-th under the
      // sanitizers); with 2 and 5, every 7th; and those around every resume
      // point.
      const std::uint64_t every = parts == 3 ? testing::kSweepStride : 7;
      if (p % every != 0 && !near_seams.count(p)) continue;
      const bool with_single = p % 5 == 0;
      ++checked;
      if (with_single) {
        ASSERT_TRUE((*cs)->Seek(Position(p)).ok());
      }
      ASSERT_TRUE((*cp)->Seek(Position(p)).ok());
      oracle.Seek(p);
      for (const Region& r : kRegions) {
        std::uint8_t vs[kRegionSize], ks[kRegionSize], vp[kRegionSize], kp[kRegionSize];
        ASSERT_TRUE((*cp)->ReadMemory(r.start, {vp, r.size}, {kp, r.size}).ok());
        if (with_single) {
          ASSERT_TRUE((*cs)->ReadMemory(r.start, {vs, r.size}, {ks, r.size}).ok());
        } else {
          std::copy(vp, vp + r.size, vs);
          std::copy(kp, kp + r.size, ks);
        }
        for (std::uint64_t j = 0; j < r.size; ++j) {
          const auto want = oracle.Byte(r.start + j);
          ASSERT_EQ(kp[j] != 0, want.has_value())
              << "position " << p << " address " << std::hex << r.start + j;
          ASSERT_EQ(vp[j], want.value_or(0))
              << "position " << p << " address " << std::hex << r.start + j;
          ASSERT_EQ(ks[j], kp[j]) << "position " << p << " address " << std::hex << r.start + j;
          ASSERT_EQ(vs[j], vp[j]) << "position " << p << " address " << std::hex << r.start + j;
          known_bytes += want.has_value();
          if (r.start == kReadOnly && p == 0) inferred_early += want.has_value();
        }
      }
      for (ThreadId t : oracle.all_threads()) {
        auto rp = (*cp)->Registers(t);
        ASSERT_TRUE(rp.ok());
        ASSERT_TRUE(**rp == *oracle.Registers(t)) << "position " << p << " thread " << t.value;
        if (!with_single) continue;
        auto rs = (*cs)->Registers(t);
        ASSERT_TRUE(rs.ok());
        ASSERT_TRUE(**rp == **rs) << "position " << p << " thread " << t.value;
      }
    }
    // The planted cases happen: read-only bytes known at position 0 by
    // inference from reads in later parts; early bytes unknown before their
    // first access and known at the end.
    EXPECT_GT(inferred_early, kRegionSize / 2);
    EXPECT_GT(known_bytes, checked * 50);

    std::mt19937_64 rng(parts);
    for (int i = 0; i < 80; ++i) {
      SCOPED_TRACE("search " + std::to_string(i));
      const Region& r = kRegions[rng() % 3];
      StopCondition c;
      Watch watch;
      watch.length = 1 + rng() % 8;
      watch.address = r.start + rng() % (r.size - 8);
      watch.kind = static_cast<WatchKind>(rng() % 3);
      c.watches.push_back(watch);
      const std::uint64_t from = rng() % (n + 1);
      const Direction d = rng() % 2 ? Direction::kForward : Direction::kBackward;
      auto got = RunUntil(*parallel, Position(from), d, c);
      auto got_single = RunUntil(*single, Position(from), d, c);
      ASSERT_TRUE(got.ok() && got_single.ok());
      const StopEvent want = testing::NaiveRunUntil(oracle, from, d, c);
      EXPECT_EQ(got->reason, want.reason);
      EXPECT_EQ(got->position, want.position);
      EXPECT_EQ(got->position, got_single->position);
      EXPECT_EQ(got->thread, want.thread);
    }
    for (int i = 0; i < 60; ++i) {
      SCOPED_TRACE("access query " + std::to_string(i));
      const Region& r = kRegions[rng() % 3];
      const std::uint64_t length = 1 + rng() % 16;
      const Address a = r.start + rng() % (r.size - 16);
      const Position at(rng() % (n + 1));
      EXPECT_EQ(Describe(LastWrite(*parallel, a, length, at)),
                Describe(LastWrite(*single, a, length, at)));
      EXPECT_EQ(Describe(NextWrite(*parallel, a, length, at)),
                Describe(NextWrite(*single, a, length, at)));
      const std::uint64_t from = rng() % (n + 1);
      auto reads = History(*parallel, a, length, Position(from), Position(n), 32);
      ASSERT_TRUE(reads.ok());
      const std::vector<Access> want =
          testing::NaiveAccesses(oracle, a, a + length, from, n, true, true);
      ASSERT_EQ(reads->size(), std::min<std::size_t>(want.size(), 32));
      for (std::size_t k = 0; k < reads->size(); ++k) {
        EXPECT_EQ((*reads)[k].event, want[k].event);
        EXPECT_EQ((*reads)[k].is_write, want[k].is_write);
        EXPECT_EQ((*reads)[k].data, want[k].data);
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(PointerSizes, X64dbgParallel, ::testing::Values(false, true),
                         [](const auto& p) { return p.param ? "trace32" : "trace64"; });

}  // namespace
}  // namespace backstep::core
