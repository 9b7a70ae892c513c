// The parallel index build (index_parallel.h) against the single pass and the
// naive oracle: a REVEN trace with its trace.cache, and fake traces with
// several threads, clears and recorded reads (value inference merged across
// the parts) given resume points (testing/resume_points.h).
// Every query (registers of every thread, memory, pc and watch searches,
// last/next write, history) must answer the same, at random positions and at
// every seam; stale and corrupt caches must fall back to the single pass.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>

#include "backstep/core/cursor.h"
#include "backstep/core/format_registry.h"
#include "backstep/core/search.h"
#include "backstep/core/trace.h"
#include "backstep/testing/fake_trace.h"
#include "backstep/testing/fake_trace_generator.h"
#include "backstep/testing/reven_generator.h"
#include "index/index_builder.h"
#include "index/index_part_builder.h"
#include "index/index_part_sink.h"
#include "index/index_relocate.h"
#include "index/index_sink.h"
#include "index/trace_index.h"
#include "replay/trace_index_of.h"
#include "testing/naive_search.h"
#include "testing/resume_points.h"
#include "testing/trace_oracle.h"

namespace backstep::core {
namespace {

namespace fs = std::filesystem;

class TempDir {
 public:
  TempDir() {
    char name[] = "/tmp/backstep-parallel-test-XXXXXX";
    path_ = mkdtemp(name);
  }
  ~TempDir() { fs::remove_all(path_); }
  std::string File(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

// What to ask a trace: debugger-space data ranges [lo, hi) and pcs.
struct Probe {
  std::vector<std::pair<Address, Address>> ranges;
  std::vector<Address> pcs;
};

std::string Describe(const Access& a) {
  std::ostringstream out;
  out << a.event << " t" << a.thread.value << (a.is_write ? " w " : " r ") << std::hex << a.address
      << ":";
  for (std::uint8_t b : a.data) out << ' ' << int(b);
  return out.str();
}

std::string Describe(const Expected<std::optional<Access>>& a) {
  if (!a.ok()) return "error " + a.status().ToString();
  return a->has_value() ? Describe(**a) : "none";
}

std::string Describe(const StopEvent& s) {
  std::ostringstream out;
  out << int(s.reason) << " @" << s.position.value << " t" << s.thread.value << " a" << s.address
      << " e" << s.event;
  return out.str();
}

// The directory's tables mean the same: threads, runs, keyframes (reader
// positions and restored registers), clears.
void ExpectSameTables(const TraceIndex& single, const TraceIndex& parallel) {
  ASSERT_EQ(parallel.event_count(), single.event_count());
  ASSERT_EQ(parallel.thread_count(), single.thread_count());
  for (std::size_t i = 0; i < single.thread_count(); ++i) {
    const ThreadRecord s = single.thread(i), p = parallel.thread(i);
    EXPECT_EQ(p.tid, s.tid) << i;
    EXPECT_EQ(p.first_event, s.first_event) << i;
    EXPECT_EQ(p.flags, s.flags) << i;
    EXPECT_EQ(p.run_count, s.run_count) << i;
  }
  ASSERT_EQ(parallel.keyframe_count(), single.keyframe_count());
  const std::size_t threads = single.thread_count();
  std::vector<RegisterFile> fs(threads, RegisterFile(X86_64())),
      fp(threads, RegisterFile(X86_64()));
  for (std::uint64_t k = 0; k < single.keyframe_count(); ++k) {
    ASSERT_EQ(parallel.KeyframeReaderPosition(k), single.KeyframeReaderPosition(k)) << k;
    single.RestoreKeyframe(k, fs);
    parallel.RestoreKeyframe(k, fp);
    for (std::size_t i = 0; i < threads; ++i) ASSERT_TRUE(fp[i] == fs[i]) << k << " " << i;
  }
  for (std::uint64_t e = 0; e < single.event_count(); ++e) {
    ASSERT_EQ(parallel.ThreadIndexAt(e), single.ThreadIndexAt(e)) << e;
    ASSERT_EQ(parallel.LastMemoryClearBefore(e), single.LastMemoryClearBefore(e)) << e;
  }
  ASSERT_TRUE(single.lists_notes() && parallel.lists_notes());
  ASSERT_EQ(parallel.note_count(), single.note_count());
  for (std::uint64_t i = 0; i < single.note_count(); ++i) {
    const TraceIndex::Note s = single.note(i), p = parallel.note(i);
    EXPECT_EQ(p.event, s.event) << i;
    EXPECT_EQ(p.tid, s.tid) << i;
    EXPECT_EQ(p.kind, s.kind) << i;
    EXPECT_EQ(p.description, s.description) << i;
  }
}

// Checks that `parallel` answers like `single` and like the oracle.
// With `reads`, the watches are of every kind (read, access too).
void ExpectSameAnswers(const Trace& single, const Trace& parallel, testing::TraceOracle& oracle,
                       const Probe& probe, std::vector<std::uint64_t> positions, std::uint64_t seed,
                       bool reads = false) {
  const std::uint64_t n = single.event_count();
  ASSERT_EQ(parallel.event_count(), n);
  ASSERT_EQ(oracle.event_count(), n);
  ASSERT_EQ(parallel.threads(), single.threads());
  ExpectSameTables(TraceIndexOf(single), TraceIndexOf(parallel));
  std::mt19937_64 rng(seed);
  for (int i = 0; i < 40; ++i) positions.push_back(rng() % (n + 1));
  positions.push_back(0);
  positions.push_back(n);
  auto cs = single.NewCursor();
  auto cp = parallel.NewCursor();
  ASSERT_TRUE(cs.ok() && cp.ok());
  for (std::uint64_t p : positions) {
    if (p > n) continue;
    SCOPED_TRACE("position " + std::to_string(p));
    ASSERT_TRUE((*cs)->Seek(Position(p)).ok());
    ASSERT_TRUE((*cp)->Seek(Position(p)).ok());
    oracle.Seek(p);
    EXPECT_EQ((*cp)->current_thread(), (*cs)->current_thread());
    for (ThreadId t : oracle.all_threads()) {
      auto rs = (*cs)->Registers(t);
      auto rp = (*cp)->Registers(t);
      ASSERT_TRUE(rs.ok() && rp.ok());
      ASSERT_TRUE(**rp == **rs) << "thread " << t.value;
      ASSERT_TRUE(**rp == *oracle.Registers(t)) << "thread " << t.value;
    }
    for (const auto& [lo, hi] : probe.ranges) {
      const Address a = lo + rng() % (hi - lo - 64);
      std::uint8_t vs[64], ks[64], vp[64], kp[64];
      ASSERT_TRUE((*cs)->ReadMemory(a, vs, ks).ok());
      ASSERT_TRUE((*cp)->ReadMemory(a, vp, kp).ok());
      for (int j = 0; j < 64; ++j) {
        ASSERT_EQ(kp[j], ks[j]) << std::hex << a + j;
        ASSERT_EQ(vp[j], vs[j]) << std::hex << a + j;
        const auto native = oracle.Translate(a + j);
        const auto want = native ? oracle.Byte(*native) : std::nullopt;
        ASSERT_EQ(kp[j] != 0, want.has_value()) << std::hex << a + j;
        ASSERT_EQ(vp[j], want.value_or(0)) << std::hex << a + j;
      }
    }
  }
  for (int i = 0; i < 40; ++i) {
    SCOPED_TRACE("search " + std::to_string(i));
    StopCondition c;
    for (int b = rng() % 3; b > 0; --b)
      c.breakpoints.push_back(probe.pcs[rng() % probe.pcs.size()]);
    for (int w = rng() % 3; w > 0; --w) {
      const auto& [lo, hi] = probe.ranges[rng() % probe.ranges.size()];
      Watch watch;
      watch.length = 1 + rng() % 8;
      watch.address = lo + rng() % (hi - lo - 8);
      watch.only_changes = rng() % 2;
      if (reads) watch.kind = static_cast<WatchKind>(rng() % 3);
      c.watches.push_back(watch);
    }
    const std::uint64_t from = rng() % (n + 1);
    const Direction d = rng() % 2 ? Direction::kForward : Direction::kBackward;
    auto got_single = RunUntil(single, Position(from), d, c);
    auto got = RunUntil(parallel, Position(from), d, c);
    ASSERT_TRUE(got.ok() && got_single.ok()) << got.status().ToString();
    EXPECT_EQ(Describe(*got), Describe(*got_single));
    const StopEvent want = testing::NaiveRunUntil(oracle, from, d, c);
    EXPECT_EQ(got->reason, want.reason);
    EXPECT_EQ(got->position, want.position);
    EXPECT_EQ(got->thread, want.thread);
  }
  for (int i = 0; i < 40; ++i) {
    SCOPED_TRACE("access query " + std::to_string(i));
    const auto& [lo, hi] = probe.ranges[rng() % probe.ranges.size()];
    const std::uint64_t length = 1 + rng() % 16;
    const Address a = lo + rng() % (hi - lo - 16);
    const Position at(rng() % (n + 1));
    EXPECT_EQ(Describe(LastWrite(parallel, a, length, at)),
              Describe(LastWrite(single, a, length, at)));
    EXPECT_EQ(Describe(NextWrite(parallel, a, length, at)),
              Describe(NextWrite(single, a, length, at)));
    auto hs = History(single, a, length, Position(0), Position(n), 64);
    auto hp = History(parallel, a, length, Position(0), Position(n), 64);
    ASSERT_TRUE(hs.ok() && hp.ok());
    ASSERT_EQ(hp->size(), hs->size());
    for (std::size_t k = 0; k < hs->size(); ++k) {
      EXPECT_EQ(Describe((*hp)[k]), Describe((*hs)[k]));
    }
  }
}

// Positions around each seam candidate and each keyframe near it.
std::vector<std::uint64_t> AroundSeams(const std::vector<std::uint64_t>& points,
                                       std::uint64_t interval) {
  std::vector<std::uint64_t> out;
  for (std::uint64_t p : points) {
    for (std::uint64_t q : {p - 1, p, p + 1, p / interval * interval, p / interval * interval + 1,
                            (p / interval + 1) * interval}) {
      out.push_back(q);
    }
  }
  return out;
}

OpenOptions TinyIndex(unsigned parts) {
  OpenOptions o;
  o.keyframe_interval = 300;
  o.index_block_entries = 8;
  o.index_snapshot_blocks = 4;
  o.index_memory_budget = 200000;
  o.index_parts = parts;
  return o;
}

ReaderFactory FakeFactory(const testing::FakeTrace& trace) {
  std::shared_ptr<const ByteSource> source = testing::FakeTraceSource(trace);
  return [source] { return testing::OpenFakeTrace(source); };
}

// --- REVEN with trace.cache ---

class ParallelRevenTest : public ::testing::Test {
 protected:
  static constexpr std::uint64_t kEvents = 40000;

  static void SetUpTestSuite() {
    dir_ = new TempDir;
    opts_.events = kEvents;
    opts_.seed = 5;
    opts_.cache_every = 1700;
    fs::create_directories(dir_->File("single"));
    fs::create_directories(dir_->File("parallel"));
    auto info = testing::GenerateRevenTrace(dir_->File("single/trace.bin"), opts_);
    ASSERT_TRUE(info.ok()) << info.status().ToString();
    info_ = new testing::RevenGenInfo(*info);
    ASSERT_TRUE(testing::GenerateRevenTrace(dir_->File("parallel/trace.bin"), opts_).ok());
    auto single = Trace::Open(dir_->File("single/trace.bin"), TinyIndex(1));
    ASSERT_TRUE(single.ok()) << single.status().ToString();
    single_ = new std::shared_ptr<Trace>(*single);
    auto reader = (*single_)->NewReader();
    ASSERT_TRUE(reader.ok());
    auto fake = testing::CaptureTrace(**reader);
    ASSERT_TRUE(fake.ok()) << fake.status().ToString();
    fake_ = new testing::FakeTrace(std::move(*fake));
  }
  static void TearDownTestSuite() {
    delete single_;
    delete fake_;
    delete info_;
    delete dir_;
  }

  Probe RevenProbe() const {
    Probe probe;
    for (const auto& r : info_->ranges) probe.ranges.push_back({r.start, r.start + r.size});
    probe.pcs = info_->code_addresses;
    return probe;
  }
  std::unique_ptr<testing::TraceOracle> Oracle() const {
    auto oracle = std::make_unique<testing::TraceOracle>(*fake_);
    const testing::RevenGenInfo* info = info_;
    oracle->set_translate([info](Address va) { return info->Translate(va); });
    return oracle;
  }

  static TempDir* dir_;
  static testing::RevenGenOptions opts_;
  static testing::RevenGenInfo* info_;
  static testing::FakeTrace* fake_;
  static std::shared_ptr<Trace>* single_;
};

TempDir* ParallelRevenTest::dir_ = nullptr;
testing::RevenGenOptions ParallelRevenTest::opts_;
testing::RevenGenInfo* ParallelRevenTest::info_ = nullptr;
testing::FakeTrace* ParallelRevenTest::fake_ = nullptr;
std::shared_ptr<Trace>* ParallelRevenTest::single_ = nullptr;

TEST_F(ParallelRevenTest, EveryQueryMatchesSinglePassAndOracle) {
  ASSERT_EQ((*single_)->index_status().build_parts, 1u);
  for (unsigned parts : {2u, 3u, 5u}) {
    SCOPED_TRACE(std::to_string(parts) + " parts");
    const std::string path = dir_->File("parallel/trace.bin");
    fs::remove(path + ".bsidx");
    auto parallel = Trace::Open(path, TinyIndex(parts));
    ASSERT_TRUE(parallel.ok()) << parallel.status().ToString();
    const IndexStatus& st = (*parallel)->index_status();
    EXPECT_EQ(st.build_parts, parts) << st.build_note;
    EXPECT_EQ(st.build_note, "");
    auto oracle = Oracle();
    ExpectSameAnswers(**single_, **parallel, *oracle, RevenProbe(),
                      AroundSeams(info_->cache_points, 300), parts);
    // The planted features, across the parts.
    StopCondition bp;
    bp.breakpoints.push_back(info_->far_pc);
    auto hit = RunUntil(**parallel, Position(0), Direction::kForward, bp);
    ASSERT_TRUE(hit.ok());
    EXPECT_EQ(hit->position.value, info_->far_pc_event);
    auto last = LastWrite(**parallel, info_->once_address, info_->once_size, Position(kEvents));
    ASSERT_TRUE(last.ok() && last->has_value());
    EXPECT_EQ((*last)->event, info_->once_event);
  }
}

TEST_F(ParallelRevenTest, ParallelIndexValidatesAndIsReused) {
  const std::string path = dir_->File("parallel/trace.bin");
  fs::remove(path + ".bsidx");
  {
    auto built = Trace::Open(path, TinyIndex(4));
    ASSERT_TRUE(built.ok()) << built.status().ToString();
    ASSERT_EQ((*built)->index_status().build_parts, 4u);
  }
  // The file on disk passes the index's own validation (checksum, directory).
  auto bytes = MapFile(path + ".bsidx");
  ASSERT_TRUE(bytes.ok());
  auto reader = OpenTraceFile(path);
  ASSERT_TRUE(reader.ok());
  IndexIdentity identity;
  identity.format = "reven";
  identity.keyframe_interval = 300;
  identity.arch_signature = ArchSignature(*(*reader)->header().arch);
  identity.trace_hash = TraceHash((*reader)->source().data());
  struct stat st;
  ASSERT_EQ(stat(path.c_str(), &st), 0);
  identity.trace_size = static_cast<std::uint64_t>(st.st_size);
  identity.trace_mtime_ns = std::int64_t(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec;
  EXPECT_EQ(ValidateIndex((*bytes)->data(), identity), "");
  auto index = TraceIndex::Open(*bytes, (*bytes)->data(), (*reader)->source().data());
  ASSERT_TRUE(index.ok()) << index.status().ToString();
  EXPECT_EQ((*index)->event_count(), kEvents);
  auto reopened = Trace::Open(path, TinyIndex(4));
  ASSERT_TRUE(reopened.ok());
  EXPECT_TRUE((*reopened)->index_status().reused);
}

TEST_F(ParallelRevenTest, StaleCacheFallsBackToSinglePass) {
  TempDir dir;
  testing::RevenGenOptions other = opts_;
  // Another, shorter trace: its cache passes the reader's checks on this
  // trace (points and offsets inside it) but describes other states.
  other.seed = 6;
  other.events = kEvents * 3 / 4;
  ASSERT_TRUE(testing::GenerateRevenTrace(dir.File("other.bin"), other).ok());
  fs::copy_file(dir_->File("single/trace.bin"), dir.File("trace.bin"));
  fs::copy_file(dir.File("other.bin.cache"), dir.File("trace.bin.cache"));
  auto reader = OpenTraceFile(dir.File("trace.bin"));
  ASSERT_TRUE(reader.ok());
  ASSERT_FALSE((*reader)->ResumePoints().empty())
      << "the stale cache must pass the reader's checks";
  auto trace = Trace::Open(dir.File("trace.bin"), TinyIndex(3));
  ASSERT_TRUE(trace.ok()) << trace.status().ToString();
  const IndexStatus& st = (*trace)->index_status();
  EXPECT_EQ(st.build_parts, 1u);
  // Either a seam does not hold, or a part decoding from a bogus offset fails.
  EXPECT_TRUE(st.build_note.find("trace.cache disagrees with the trace") != std::string::npos ||
              st.build_note.find(") failed: ") != std::string::npos)
      << st.build_note;
  auto oracle = Oracle();
  ExpectSameAnswers(**single_, **trace, *oracle, RevenProbe(),
                    AroundSeams(info_->cache_points, 300), 7);
}

TEST_F(ParallelRevenTest, CorruptOrMissingCacheFallsBackToSinglePass) {
  TempDir dir;
  fs::copy_file(dir_->File("single/trace.bin"), dir.File("trace.bin"));
  {
    auto trace = Trace::Open(dir.File("trace.bin"), TinyIndex(3));
    ASSERT_TRUE(trace.ok());
    EXPECT_EQ((*trace)->index_status().build_parts, 1u);
    EXPECT_EQ((*trace)->index_status().build_note, "no resume points");
  }
  std::ifstream in(dir_->File("single/trace.bin.cache"), std::ios::binary);
  std::vector<char> cache((std::istreambuf_iterator<char>(in)), {});
  cache.resize(cache.size() * 2 / 3);  // truncated
  std::ofstream(dir.File("trace.bin.cache"), std::ios::binary).write(cache.data(), cache.size());
  fs::remove(dir.File("trace.bin.bsidx"));
  auto trace = Trace::Open(dir.File("trace.bin"), TinyIndex(3));
  ASSERT_TRUE(trace.ok()) << trace.status().ToString();
  EXPECT_EQ((*trace)->index_status().build_parts, 1u);
  EXPECT_EQ((*trace)->index_status().build_note, "no resume points");
  auto oracle = Oracle();
  ExpectSameAnswers(**single_, **trace, *oracle, RevenProbe(), {}, 8);
}

TEST_F(ParallelRevenTest, DamagedTraceReportsTheSinglePassError) {
  // The last part fails on the cut event: the build falls back, and the
  // error is the one the single pass reports.
  TempDir dir;
  std::ifstream in(dir_->File("single/trace.bin"), std::ios::binary);
  std::vector<char> bytes((std::istreambuf_iterator<char>(in)), {});
  bytes.resize(bytes.size() - 100);
  std::ofstream(dir.File("trace.bin"), std::ios::binary).write(bytes.data(), bytes.size());
  fs::copy_file(dir_->File("single/trace.bin.cache"), dir.File("trace.bin.cache"));
  auto single = Trace::Open(dir.File("trace.bin"), TinyIndex(1));
  auto parallel = Trace::Open(dir.File("trace.bin"), TinyIndex(3));
  ASSERT_FALSE(single.ok());
  ASSERT_FALSE(parallel.ok());
  EXPECT_TRUE(parallel.status().IsCorruption()) << parallel.status().ToString();
  EXPECT_EQ(parallel.status().ToString(), single.status().ToString());
  EXPECT_FALSE(fs::exists(dir.File("trace.bin.bsidx")));
}

TEST(ParallelBuildTest, ProgressIsSummedAndCancelStopsEveryPart) {
  TempDir dir;
  testing::RevenGenOptions o;
  o.events = 300000;
  o.cache_every = 10000;
  ASSERT_TRUE(testing::GenerateRevenTrace(dir.File("t.bin"), o).ok());
  OpenOptions options;
  options.index_parts = 3;
  std::vector<std::pair<std::uint64_t, std::uint64_t>> calls;
  options.progress = [&](std::string_view, std::uint64_t done, std::uint64_t total) {
    calls.push_back({done, total});
    return true;
  };
  {
    auto trace = Trace::Open(dir.File("t.bin"), options);
    ASSERT_TRUE(trace.ok()) << trace.status().ToString();
    EXPECT_EQ((*trace)->index_status().build_parts, 3u);
  }
  ASSERT_FALSE(calls.empty());
  EXPECT_EQ(calls.back(), std::make_pair(o.events, o.events));
  for (std::size_t i = 1; i < calls.size(); ++i) EXPECT_LE(calls[i - 1].first, calls[i].first);
  fs::remove(dir.File("t.bin.bsidx"));
  int asked = 0;
  options.progress = [&](std::string_view, std::uint64_t, std::uint64_t) {
    ++asked;
    return false;
  };
  auto cancelled = Trace::Open(dir.File("t.bin"), options);
  ASSERT_FALSE(cancelled.ok());
  EXPECT_TRUE(cancelled.status().IsInterrupted()) << cancelled.status().ToString();
  EXPECT_EQ(asked, 1);
  EXPECT_FALSE(fs::exists(dir.File("t.bin.bsidx")));
  for (const auto& entry : fs::directory_iterator(dir.File(""))) {
    EXPECT_EQ(entry.path().string().find(".tmp"), std::string::npos) << entry.path();
  }
}

TEST(PartSinkTest, FilePartIsUnnamedWritableAndGoesAway) {
  TempDir dir;
  auto sink = NewFilePartSink(dir.File(""));
  ASSERT_TRUE(sink.ok()) << sink.status().ToString();
  std::vector<std::uint8_t> big(3 << 20);
  for (std::size_t i = 0; i < big.size(); ++i) big[i] = static_cast<std::uint8_t>(i * 7);
  (*sink)->WriteRecord(std::uint64_t(42));
  (*sink)->Write(big);
  (*sink)->Pad8();
  ASSERT_EQ((*sink)->size(), 8 + big.size());
  auto bytes = (*sink)->Bytes();
  ASSERT_TRUE(bytes.ok()) << bytes.status().ToString();
  ASSERT_EQ(bytes->size(), 8 + big.size());
  EXPECT_EQ(LoadRecord<std::uint64_t>(bytes->data()), 42u);
  EXPECT_TRUE(std::equal(big.begin(), big.end(), bytes->begin() + 8));
  const std::uint64_t patched = 0x1122334455667788;
  std::memcpy(bytes->data(), &patched, 8);
  EXPECT_EQ(LoadRecord<std::uint64_t>((*sink)->Bytes()->data()), patched);
  EXPECT_TRUE(fs::is_empty(dir.File(""))) << "the part has no name";
  EXPECT_FALSE(NewFilePartSink(dir.File("missing/dir")).ok());
}

TEST(RelocateTest, OffsetsOutsideThePartAreCorruption) {
  testing::FakeTraceOptions t;
  t.events = 300;
  t.threads = 2;
  const testing::FakeTrace fake = testing::GenerateFakeTrace(t);
  auto reader = FakeFactory(fake)();
  ASSERT_TRUE(reader.ok());
  IndexPartPlan plan;
  plan.seed = (*reader)->InitialRegisters();
  plan.keyframe_interval = 50;
  MemoryPartSink sink;
  IndexTables tables;
  ASSERT_TRUE(BuildIndexPart(**reader, plan, sink, &tables).ok());
  ASSERT_EQ(tables.end_event, 300u);
  ASSERT_EQ(tables.keyframes.size(), 7u);
  std::vector<std::uint64_t> identity(tables.threads.size());
  for (std::size_t i = 0; i < identity.size(); ++i) identity[i] = i;
  {
    IndexTables moved = tables;
    auto body = *sink.Bytes();
    std::vector<std::uint8_t> copy(body.begin(), body.end());
    ASSERT_TRUE(RelocatePart(copy, 1000, identity, &moved).ok());
    EXPECT_EQ(moved.keyframes[3].refs_offset, tables.keyframes[3].refs_offset + 1000);
    EXPECT_EQ(moved.segments[0].pcs_offset, tables.segments[0].pcs_offset + 1000);
  }
  IndexTables bad = tables;
  bad.keyframes[2].refs_offset = (*sink.Bytes()).size();
  Status s = RelocatePart(*sink.Bytes(), 1000, identity, &bad);
  EXPECT_TRUE(s.IsCorruption()) << s.ToString();
  EXPECT_NE(s.ToString().find("keyframe refs at part offset"), std::string::npos) << s.ToString();
  EXPECT_FALSE(RelocatePart(*sink.Bytes(), 0, {}, &bad).ok());
}

// --- fake traces (threads, clears) with resume points ---

struct FakeCase {
  std::string name;
  testing::FakeTraceOptions trace;
};

std::vector<FakeCase> FakeCases() {
  std::vector<FakeCase> out;
  auto add = [&](std::string name, int threads, AddressKind kind, bool clears, bool full,
                 std::uint64_t seed) {
    testing::FakeTraceOptions t;
    t.seed = seed;
    t.events = 1500;
    t.threads = threads;
    t.address_kind = kind;
    t.clears = clears;
    t.full_image = full;
    t.full_registers = full;
    t.reader_copies_data = !full;
    out.push_back({name, t});
  };
  add("single_virtual", 1, AddressKind::kVirtual, false, true, 21);
  add("threads_clears", 3, AddressKind::kVirtual, true, false, 22);
  add("threads_partial", 4, AddressKind::kVirtual, false, false, 23);
  add("physical_threads", 2, AddressKind::kPhysical, false, true, 24);
  add("threads_notes", 3, AddressKind::kVirtual, false, false, 25);
  out.back().trace.notes = true;
  return out;
}

Probe FakeProbe(AddressKind kind) {
  Probe probe;
  for (const auto& [lo, hi] : testing::FakeDataRegions(kind)) {
    if (hi - lo > 80) probe.ranges.push_back({lo, hi});
  }
  probe.pcs = testing::FakePcPool();
  return probe;
}

TEST(ParallelFakeTest, ThreadsAndClearsMatchSinglePassAndOracle) {
  for (const FakeCase& c : FakeCases()) {
    SCOPED_TRACE(c.name);
    const testing::FakeTrace fake = testing::GenerateFakeTrace(c.trace);
    auto single = Trace::OpenWith(FakeFactory(fake), "", TinyIndex(1));
    ASSERT_TRUE(single.ok()) << single.status().ToString();
    // Events with notes are listed in every part (a few in each).
    EXPECT_EQ(TraceIndexOf(**single).note_count() > 20, c.trace.notes);
    const std::vector<std::uint64_t> points = {150, 300, 301, 599, 600, 777, 1100, 1499};
    auto factory = testing::WithResumePoints(FakeFactory(fake), points);
    ASSERT_TRUE(factory.ok());
    for (unsigned parts : {2u, 4u, 8u}) {
      SCOPED_TRACE(std::to_string(parts) + " parts");
      auto parallel = Trace::OpenWith(*factory, "", TinyIndex(parts));
      ASSERT_TRUE(parallel.ok()) << parallel.status().ToString();
      // Split points are the resume points nearest to k/parts of the trace.
      EXPECT_GT((*parallel)->index_status().build_parts, parts / 2);
      EXPECT_EQ((*parallel)->index_status().build_note, "");
      testing::TraceOracle oracle(fake);
      ExpectSameAnswers(**single, **parallel, oracle, FakeProbe(c.trace.address_kind),
                        AroundSeams(points, 300), parts);
    }
  }
}

TEST(ParallelFakeTest, TamperedResumePointFallsBack) {
  testing::FakeTraceOptions t;
  t.seed = 31;
  t.events = 1200;
  t.threads = 3;
  const testing::FakeTrace fake = testing::GenerateFakeTrace(t);
  struct Tamper {
    std::string name;
    std::function<void(std::vector<ResumePoint>&)> change;
    std::string why;
  };
  std::vector<Tamper> cases = {
      {"register", [&](auto& p) { p[0].registers[0].second.SetU64(X86_64().sp(), 0x1234567); },
       "registers of thread"},
      {"reader position", [](auto& p) { p[0].reader_position = p[1].reader_position; },
       "reader position differs"},
      {"thread missing", [](auto& p) { p[0].registers.pop_back(); }, "threads, the trace has"},
  };
  auto single = Trace::OpenWith(FakeFactory(fake), "", TinyIndex(1));
  ASSERT_TRUE(single.ok());
  for (const Tamper& c : cases) {
    SCOPED_TRACE(c.name);
    auto factory = testing::WithResumePoints(FakeFactory(fake), {600, 900}, c.change);
    ASSERT_TRUE(factory.ok());
    auto trace = Trace::OpenWith(*factory, "", TinyIndex(2));
    ASSERT_TRUE(trace.ok()) << trace.status().ToString();
    const IndexStatus& st = (*trace)->index_status();
    EXPECT_EQ(st.build_parts, 1u);
    EXPECT_NE(st.build_note.find(c.why), std::string::npos) << st.build_note;
    testing::TraceOracle oracle(fake);
    ExpectSameAnswers(**single, **trace, oracle, FakeProbe(t.address_kind), {599, 600, 601}, 3);
  }
}

// Value inference across the parts (index_inference_merge.h): reads in a
// part whose value reaches back into earlier parts, bytes never written,
// partial images, clears inside parts, several threads.
TEST(ParallelFakeTest, TracesThatRecordReadsMatchSinglePassAndOracle) {
  struct ReadsCase {
    std::string name;
    int threads;
    bool clears, full_image;
    std::uint64_t seed;
  };
  const std::vector<ReadsCase> cases = {
      {"reads_threads", 3, false, false, 41},
      {"reads_clears", 2, true, false, 42},
      {"reads_full_image", 1, false, true, 43},
      {"reads_clears_image", 4, true, true, 44},
  };
  for (const ReadsCase& rc : cases) {
    SCOPED_TRACE(rc.name);
    testing::FakeTraceOptions t;
    t.seed = rc.seed;
    t.events = 1500;
    t.threads = rc.threads;
    t.records_reads = true;
    t.clears = rc.clears;
    t.full_image = rc.full_image;
    t.full_registers = rc.full_image;
    t.reader_copies_data = rc.seed % 2;
    const testing::FakeTrace fake = testing::GenerateFakeTrace(t);
    auto single = Trace::OpenWith(FakeFactory(fake), "", TinyIndex(1));
    ASSERT_TRUE(single.ok()) << single.status().ToString();
    const std::vector<std::uint64_t> points = {150, 300, 301, 599, 600, 777, 1100, 1499};
    auto factory = testing::WithResumePoints(FakeFactory(fake), points);
    ASSERT_TRUE(factory.ok());
    for (unsigned parts : {2u, 3u, 5u}) {
      SCOPED_TRACE(std::to_string(parts) + " parts");
      auto parallel = Trace::OpenWith(*factory, "", TinyIndex(parts));
      ASSERT_TRUE(parallel.ok()) << parallel.status().ToString();
      EXPECT_EQ((*parallel)->index_status().build_parts, parts);
      EXPECT_EQ((*parallel)->index_status().build_note, "");
      testing::TraceOracle oracle(fake);
      ExpectSameAnswers(**single, **parallel, oracle, FakeProbe(t.address_kind),
                        AroundSeams(points, 300), parts, /*reads=*/true);
    }
  }
}

}  // namespace
}  // namespace backstep::core
