#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>

#include "backstep/core/cursor.h"
#include "backstep/testing/fake_trace.h"
#include "backstep/testing/fake_trace_generator.h"
#include "index/index_format.h"
#include "index/index_hash.h"
#include "index/index_store.h"
#include "index/trace_index.h"
#include "replay/trace_index_of.h"
#include "testing/trace_oracle.h"

namespace backstep::core {
namespace {

namespace fs = std::filesystem;

std::vector<std::uint8_t> ReadFile(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(f), {}};
}

void WriteFile(const std::string& path, const std::vector<std::uint8_t>& bytes) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
}

class TempDir {
 public:
  TempDir() {
    char name[] = "/tmp/backstep-index-test-XXXXXX";
    path_ = mkdtemp(name);
  }
  ~TempDir() { fs::remove_all(path_); }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

TEST(Hash64Test, KnownValuesAndStreaming) {
  EXPECT_EQ(Hash64::Of({}), 0xEF46DB3751D8E999ull);
  const std::string abc = "abc";
  EXPECT_EQ(Hash64::Of({reinterpret_cast<const std::uint8_t*>(abc.data()), 3}),
            0x44BC2CF5AD770999ull);
  std::vector<std::uint8_t> data(1000);
  std::mt19937_64 rng(1);
  for (auto& b : data) b = static_cast<std::uint8_t>(rng());
  const std::uint64_t whole = Hash64::Of(data);
  for (int i = 0; i < 20; ++i) {
    Hash64 h;
    std::size_t at = 0;
    while (at < data.size()) {
      const std::size_t n = std::min<std::size_t>(data.size() - at, rng() % 70);
      h.Update(std::span(data).subspan(at, n));
      at += n;
    }
    EXPECT_EQ(h.Digest(), whole);
  }
}

TEST(IndexFormatTest, VarintsAndLineMasks) {
  for (std::uint64_t v : {0ull, 1ull, 127ull, 128ull, 300ull, ~0ull}) {
    std::uint8_t buf[10];
    std::uint8_t* out = buf;
    PutVarint(v, out);
    const std::uint8_t* in = buf;
    EXPECT_EQ(GetVarint(in, out), v);
    EXPECT_EQ(in, out);
    if (out - buf > 1) {  // cut short: stops at the end, never past it
      in = buf;
      EXPECT_NE(GetVarint(in, out - 1), v);
      EXPECT_EQ(in, out - 1);
    }
  }
  EXPECT_EQ(LineMask(0, 1), 1u);
  EXPECT_EQ(LineMask(63, 2), 3u);
  EXPECT_EQ(LineMask(4095, 1), 1ull << 63);
  EXPECT_EQ(LineMask(0, 4096), ~0ull);
}

// A small trace in a file, its oracle, and checks of a reopened trace.
class IndexFileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    testing::FakeTraceOptions o;
    o.events = 400;
    o.threads = 2;
    o.records_reads = true;
    o.clears = true;
    o.full_image = false;
    fake_ = testing::GenerateFakeTrace(o);
    trace_path_ = dir_.path() + "/trace.fake";
    ASSERT_TRUE(testing::WriteFakeTraceFile(fake_, trace_path_).ok());
    options_.cache_dir = dir_.path() + "/cache";
    options_.keyframe_interval = 50;
  }

  std::shared_ptr<Trace> Open() {
    auto trace = testing::OpenFakeFile(trace_path_, options_);
    EXPECT_TRUE(trace.ok()) << trace.status().ToString();
    return trace.ok() ? *trace : nullptr;
  }

  // Registers and some memory at a few positions equal the oracle's.
  void ExpectAnswers(const Trace& trace) {
    testing::TraceOracle oracle(fake_);
    auto cursor = trace.NewCursor();
    ASSERT_TRUE(cursor.ok());
    const std::uint64_t n = fake_.events.size();
    for (std::uint64_t p : {std::uint64_t(0), std::uint64_t(77), n / 2, n - 1, n}) {
      ASSERT_TRUE((*cursor)->Seek(Position(p)).ok());
      oracle.Seek(p);
      for (ThreadId t : oracle.all_threads()) {
        ASSERT_TRUE(**(*cursor)->Registers(t) == *oracle.Registers(t)) << "position " << p;
      }
      std::uint8_t v[300], k[300];
      ASSERT_TRUE((*cursor)->ReadMemory(0x10000, v, k).ok());
      for (int i = 0; i < 300; ++i) {
        const auto want = oracle.Byte(0x10000 + i);
        ASSERT_EQ(k[i] != 0, want.has_value()) << "position " << p << " byte " << i;
        if (want) {
          ASSERT_EQ(v[i], *want);
        }
      }
    }
  }

  TempDir dir_;
  testing::FakeTrace fake_;
  std::string trace_path_;
  OpenOptions options_;
};

TEST_F(IndexFileTest, BuildsThenReuses) {
  auto first = Open();
  ASSERT_TRUE(first);
  EXPECT_FALSE(first->index_status().reused);
  EXPECT_EQ(first->index_status().rebuilt_why, "missing");
  EXPECT_EQ(first->index_status().path, trace_path_ + ".bsidx");
  EXPECT_EQ(first->index_status().size_bytes, fs::file_size(trace_path_ + ".bsidx"));
  ExpectAnswers(*first);
  auto second = Open();
  ASSERT_TRUE(second);
  EXPECT_TRUE(second->index_status().reused);
  ExpectAnswers(*second);
  // No temporary files are left behind.
  int files = 0;
  for (const auto& entry : fs::directory_iterator(dir_.path())) files += entry.is_regular_file();
  EXPECT_EQ(files, 2);
}

TEST_F(IndexFileTest, StaleIndexIsRebuilt) {
  ASSERT_TRUE(Open());
  // Same bytes, new mtime.
  struct timespec times[2] = {{0, UTIME_OMIT}, {12345, 678}};
  ASSERT_EQ(utimensat(AT_FDCWD, trace_path_.c_str(), times, 0), 0);
  auto touched = Open();
  EXPECT_EQ(touched->index_status().rebuilt_why, "stale: trace modified");
  // Another trace under the same name.
  testing::FakeTraceOptions o;
  o.events = 300;
  o.seed = 99;
  fake_ = testing::GenerateFakeTrace(o);
  ASSERT_TRUE(testing::WriteFakeTraceFile(fake_, trace_path_).ok());
  auto modified = Open();
  EXPECT_FALSE(modified->index_status().reused);
  EXPECT_EQ(modified->index_status().rebuilt_why, "stale: trace modified");
  EXPECT_EQ(modified->event_count(), 300u);
  ExpectAnswers(*modified);
  options_.keyframe_interval = 64;
  auto rekeyed = Open();
  EXPECT_EQ(rekeyed->index_status().rebuilt_why, "stale: keyframe interval changed");
  EXPECT_TRUE(Open()->index_status().reused);
  // An index an older backstep wrote (its format number in the header).
  std::vector<std::uint8_t> older = ReadFile(trace_path_ + ".bsidx");
  const std::uint32_t previous = kIndexVersion - 1;
  std::memcpy(older.data() + offsetof(IndexHeader, version), &previous, sizeof(previous));
  WriteFile(trace_path_ + ".bsidx", older);
  auto upgraded = Open();
  EXPECT_FALSE(upgraded->index_status().reused);
  EXPECT_EQ(upgraded->index_status().rebuilt_why,
            "stale: index format " + std::to_string(previous) + ", this backstep writes " +
                std::to_string(kIndexVersion));
  ExpectAnswers(*upgraded);
}

TEST_F(IndexFileTest, EveryFlippedByteAndTruncationIsDetected) {
  ASSERT_TRUE(Open());
  const std::vector<std::uint8_t> good = ReadFile(trace_path_ + ".bsidx");
  auto source = MapFile(trace_path_);
  ASSERT_TRUE(source.ok());
  auto reader = testing::OpenFakeTrace(*source);
  IndexIdentity id;
  {
    const TraceHeader& h = (*reader)->header();
    struct stat st;
    ASSERT_EQ(stat(trace_path_.c_str(), &st), 0);
    id.trace_size = st.st_size;
    id.trace_mtime_ns = std::int64_t(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec;
    id.trace_hash = TraceHash((*source)->data());
    id.format = h.format;
    id.keyframe_interval = 50;
    id.arch_signature = ArchSignature(*h.arch);
  }
  ASSERT_EQ(ValidateIndex(good, id), "");
  std::vector<std::uint8_t> bad = good;
  for (std::size_t i = 0; i < good.size(); ++i) {
    bad[i] ^= 0x20;
    ASSERT_NE(ValidateIndex(bad, id), "") << "flip at " << i;
    bad[i] = good[i];
  }
  for (std::size_t len = 0; len < good.size(); ++len) {
    ASSERT_NE(ValidateIndex(std::span(good).first(len), id), "") << "truncated to " << len;
  }
}

TEST_F(IndexFileTest, DamagedIndexIsRebuiltAndAnswersCorrectly) {
  ASSERT_TRUE(Open());
  const std::string index_path = trace_path_ + ".bsidx";
  const std::vector<std::uint8_t> good = ReadFile(index_path);
  std::mt19937_64 rng(5);
  for (int i = 0; i < 24; ++i) {
    std::vector<std::uint8_t> bad = good;
    if (i % 2) {
      bad.resize(rng() % bad.size());
    } else {
      bad[rng() % bad.size()] ^= static_cast<std::uint8_t>(1 + rng() % 255);
    }
    WriteFile(index_path, bad);
    auto trace = Open();
    ASSERT_TRUE(trace);
    EXPECT_FALSE(trace->index_status().reused) << "damage " << i;
    const std::string& why = trace->index_status().rebuilt_why;
    EXPECT_TRUE(why == "truncated" || why.rfind("corrupt", 0) == 0 || why.rfind("stale", 0) == 0)
        << why;
    if (i % 6 == 0) ExpectAnswers(*trace);
  }
  EXPECT_EQ(ReadFile(index_path), good);  // rebuilding is deterministic
}

TEST_F(IndexFileTest, CancelledBuildLeavesNoIndex) {
  testing::FakeTraceOptions o;
  o.events = 200000;
  fake_ = testing::GenerateFakeTrace(o);
  ASSERT_TRUE(testing::WriteFakeTraceFile(fake_, trace_path_).ok());
  options_.progress = [](std::string_view, std::uint64_t done, std::uint64_t) {
    return done < 100000;
  };
  auto trace = testing::OpenFakeFile(trace_path_, options_);
  EXPECT_TRUE(trace.status().IsInterrupted()) << trace.status().ToString();
  int files = 0;
  for (const auto& entry : fs::directory_iterator(dir_.path())) files += entry.is_regular_file();
  EXPECT_EQ(files, 1);
  options_.progress = nullptr;
  options_.build_index = false;
  EXPECT_TRUE(testing::OpenFakeFile(trace_path_, options_).status().IsNotFound());
}

// With a read-only trace directory the index goes to the cache directory.
// Root ignores directory permissions, so the check runs in a child process
// that gives up root first.
TEST_F(IndexFileTest, ReadOnlyDirectoryUsesCacheDirectory) {
  const std::string ro = dir_.path() + "/ro";
  ASSERT_TRUE(fs::create_directory(ro));
  const std::string path = ro + "/trace.fake";
  ASSERT_TRUE(testing::WriteFakeTraceFile(fake_, path).ok());
  ASSERT_TRUE(fs::create_directory(options_.cache_dir));
  chmod(dir_.path().c_str(), 0755);
  chmod(options_.cache_dir.c_str(), 0777);
  chmod(path.c_str(), 0644);
  chmod(ro.c_str(), 0555);
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    if (geteuid() == 0 && (setgid(65534) != 0 || setuid(65534) != 0)) _exit(10);
    auto first = testing::OpenFakeFile(path, options_);
    if (!first.ok()) _exit(11);
    const IndexStatus& st = (*first)->index_status();
    if (st.reused || st.path != CacheIndexPath(path, options_.cache_dir)) _exit(12);
    auto second = testing::OpenFakeFile(path, options_);
    if (!second.ok() || !(*second)->index_status().reused) _exit(13);
    _exit(0);
  }
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0);
  EXPECT_FALSE(fs::exists(path + ".bsidx"));
  chmod(ro.c_str(), 0755);
}

TEST(IndexSizeTest, ReportsSizePerEvent) {
  testing::FakeTraceOptions o;
  o.events = 20000;
  const testing::FakeTrace fake = testing::GenerateFakeTrace(o);
  auto trace = testing::OpenFakeInMemory(fake);
  ASSERT_TRUE(trace.ok());
  const double trace_bytes = static_cast<double>(testing::SerializeFakeTrace(fake).size());
  const double index_bytes = static_cast<double>((*trace)->index_status().size_bytes);
  std::printf("fake trace: %.0f bytes, index: %.0f bytes (%.1f%%, %.1f bytes/event)\n", trace_bytes,
              index_bytes, 100 * index_bytes / trace_bytes, index_bytes / 20000);
  // NOTE: no size assertion: fake traces are much denser than real ones.
}

}  // namespace
}  // namespace backstep::core

namespace backstep::core {
namespace {

// The pc index answers next/previous execution of a pc and of a pc range
// like a scan of the oracle's per-event pcs.
TEST(PcIndexTest, MatchesOracleScan) {
  testing::FakeTraceOptions o;
  o.events = 3000;
  o.threads = 3;
  o.full_registers = false;
  const testing::FakeTrace fake = testing::GenerateFakeTrace(o);
  const testing::TraceOracle oracle(fake);
  OpenOptions options;
  options.index_memory_budget = 4000;  // many segments
  auto trace = testing::OpenFakeInMemory(fake, options);
  ASSERT_TRUE(trace.ok());
  const TraceIndex& index = TraceIndexOf(**trace);
  const auto pcs = testing::FakePcPool();
  std::mt19937_64 rng(3);
  for (int i = 0; i < 500; ++i) {
    const std::uint64_t at = rng() % 3001;
    const Address pc = pcs[rng() % pcs.size()];
    const Address lo = pcs[rng() % pcs.size()], hi = lo + 4 * (rng() % 6);
    std::optional<std::uint64_t> next, prev, next_range;
    for (std::uint64_t q = 0; q < 3000; ++q) {
      const auto p = oracle.pc_of(q);
      if (!p) continue;
      if (*p == pc && q >= at && !next) next = q;
      if (*p == pc && q < at) prev = q;
      if (*p >= lo && *p <= hi && q >= at && !next_range) next_range = q;
    }
    ASSERT_EQ(index.NextPc(pc, at), next) << "at " << at;
    ASSERT_EQ(index.PrevPc(pc, at), prev) << "at " << at;
    ASSERT_EQ(index.NextPcInRange(lo, hi, at), next_range) << "at " << at;
  }
}

}  // namespace
}  // namespace backstep::core
