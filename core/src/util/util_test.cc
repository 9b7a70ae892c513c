#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>

#include "backstep/core/byte_source.h"
#include "backstep/core/expected.h"
#include "backstep/core/status.h"
#include "gtest/gtest.h"
#include "util/atomic_file.h"
#include "util/byte_reader.h"
#include "util/hex.h"

namespace backstep::core {
namespace {

namespace fs = std::filesystem;

fs::path TempDir() {
  fs::path dir = fs::temp_directory_path() / ("backstep-util-" + std::to_string(getpid()));
  fs::create_directories(dir);
  return dir;
}

TEST(Status, OkIsCheapAndPrints) {
  Status s;
  EXPECT_TRUE(s.ok());
  EXPECT_EQ(s.ToString(), "OK");
  EXPECT_EQ(s.message(), "");
  EXPECT_TRUE(s.Annotate("ignored").ok());
}

TEST(Status, AnnotateKeepsCodeAndPrefixesContext) {
  Status s = Status::Corruption("events at offset 0x10: bad count byte");
  Status a = s.Annotate("trace.bin");
  EXPECT_TRUE(a.IsCorruption());
  EXPECT_EQ(a.message(), "trace.bin: events at offset 0x10: bad count byte");
  EXPECT_EQ(a.ToString(), "Corruption: trace.bin: events at offset 0x10: bad count byte");
  EXPECT_EQ(s.message(), "events at offset 0x10: bad count byte");  // original unchanged
}

TEST(Status, EveryCodeHasAName) {
  EXPECT_EQ(StatusCodeName(StatusCode::kNotFound), "NotFound");
  EXPECT_EQ(StatusCodeName(StatusCode::kOutOfRange), "OutOfRange");
  EXPECT_EQ(StatusCodeName(StatusCode::kInterrupted), "Interrupted");
  EXPECT_TRUE(Status::Interrupted("x").IsInterrupted());
  EXPECT_TRUE(Status::Unsupported("x").IsUnsupported());
}

Expected<int> Half(int v) {
  if (v % 2) return Status::InvalidArgument("odd");
  return v / 2;
}

Status UseHalf(int v, int* out) {
  BACKSTEP_ASSIGN_OR_RETURN(int h, Half(v));
  *out = h;
  return Status();
}

TEST(Expected, ValueAndErrorPropagate) {
  auto e = Half(4);
  ASSERT_TRUE(e.ok());
  EXPECT_EQ(*e, 2);
  EXPECT_TRUE(e.status().ok());
  auto f = Half(3);
  EXPECT_FALSE(f.ok());
  EXPECT_EQ(f.status().message(), "odd");
  int out = 0;
  EXPECT_TRUE(UseHalf(8, &out).ok());
  EXPECT_EQ(out, 4);
  EXPECT_EQ(UseHalf(7, &out).message(), "odd");
}

TEST(ByteReader, ReadsLittleEndianAndFailsStickyOnShortReads) {
  const std::uint8_t bytes[] = {0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08, 0x09};
  ByteReader r(bytes, 100);
  EXPECT_EQ(r.U16(), 0x0201);
  EXPECT_EQ(r.offset(), 102u);
  EXPECT_EQ(r.U32(), 0x06050403u);
  EXPECT_EQ(r.Le(3), 0x090807u);
  EXPECT_TRUE(r.ok());
  EXPECT_TRUE(r.empty());
  EXPECT_EQ(r.U8(), 0);
  EXPECT_FALSE(r.ok());
  EXPECT_EQ(r.U8(), 0);  // stays failed
}

TEST(ByteReader, HugeLengthsFailWithoutOverflow) {
  const std::uint8_t bytes[4] = {};
  ByteReader r(bytes);
  r.U8();
  EXPECT_TRUE(r.Bytes(~std::uint64_t(0)).empty());
  EXPECT_FALSE(r.ok());
}

TEST(ByteReader, BigEndianHeaderField) {
  const std::uint8_t bytes[] = {0x00, 0x00, 0x00, 0x01};
  ByteReader r(bytes);
  EXPECT_EQ(r.U32BigEndian(), 1u);
}

TEST(Hex, Formats) {
  EXPECT_EQ(HexU64(0x1a2b), "0x1a2b");
  EXPECT_EQ(HexPadded(0x1a, 4), "0x001a");
  const std::uint8_t b[] = {0xde, 0xad};
  EXPECT_EQ(HexBytes(b), "dead");
  EXPECT_EQ(HexBytes(b, ' '), "de ad");
}

TEST(ByteSource, MapsFilesAndReportsErrorsWithTheName) {
  fs::path dir = TempDir();
  fs::path file = dir / "data.bin";
  std::ofstream(file) << "hello";
  auto src = MapFile(file);
  ASSERT_TRUE(src.ok()) << src.status().ToString();
  EXPECT_EQ((*src)->size(), 5u);
  EXPECT_EQ((*src)->data()[0], 'h');
  EXPECT_EQ((*src)->name(), file.string());

  auto missing = MapFile((dir / "nope").string());
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("nope"), std::string::npos);
  EXPECT_FALSE(MapFile(dir.string()).ok());  // a directory

  fs::path empty = dir / "empty.bin";
  std::ofstream(empty).flush();
  auto e = MapFile(empty);
  ASSERT_TRUE(e.ok());
  EXPECT_EQ((*e)->size(), 0u);
  fs::remove_all(dir);
}

// The pages of [from, to) of the mapping that the page cache holds.
std::size_t CachedPages(const ByteSource& source, std::size_t from, std::size_t to) {
  std::vector<unsigned char> cached((to - from) / 4096);
  auto* at = const_cast<std::uint8_t*>(source.data().data()) + from;
  std::size_t n = 0;
  if (mincore(at, to - from, cached.data()) != 0) return ~n;
  for (unsigned char c : cached) n += c & 1;
  return n;
}

// The pages of [from, to) of the mapping that its page table maps
// (/proc/self/pagemap, bit 63).
std::size_t MappedPages(const ByteSource& source, std::size_t from, std::size_t to) {
  const std::size_t pages = (to - from) / 4096;
  const auto at = reinterpret_cast<std::uintptr_t>(source.data().data()) + from;
  std::size_t n = 0;
  std::vector<std::uint64_t> entries(pages);
  const int fd = open("/proc/self/pagemap", O_RDONLY);
  if (fd < 0) return ~n;
  const auto bytes = static_cast<ssize_t>(pages * sizeof(std::uint64_t));
  const bool read_all = pread(fd, entries.data(), bytes, (at / 4096) * 8) == bytes;
  close(fd);
  if (!read_all) return ~n;
  for (std::uint64_t e : entries) n += e >> 63;
  return n;
}

TEST(ByteSource, MapInCachedPagesMapsTheCachedPagesAndReadsNothing) {
  fs::path dir = TempDir();
  fs::path file = dir / "pages.bin";
  constexpr std::size_t kHalf = 4 << 20, kPages = kHalf / 4096;
  {
    std::vector<char> bytes(2 * kHalf);
    for (std::size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<char>(i * 7 + 1);
    std::ofstream(file, std::ios::binary).write(bytes.data(), bytes.size());
  }
  // The second half leaves the page cache (written back first).
  const int fd = open(file.c_str(), O_RDONLY);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(fdatasync(fd), 0);
  ASSERT_EQ(posix_fadvise(fd, kHalf, kHalf, POSIX_FADV_DONTNEED), 0);
  close(fd);

  auto mapped = MapFile(file);
  ASSERT_TRUE(mapped.ok()) << mapped.status().ToString();
  const ByteSource& source = **mapped;
  ASSERT_EQ(CachedPages(source, 0, kHalf), kPages);
  ASSERT_EQ(CachedPages(source, kHalf, 2 * kHalf), 0u)
      << "the page cache kept the dropped half: is " << dir << " a tmpfs?";
  EXPECT_EQ(MappedPages(source, 0, 2 * kHalf), 0u) << "mapped before it was asked";

  source.MapInCachedPages();
  EXPECT_EQ(MappedPages(source, 0, kHalf), kPages);
  EXPECT_EQ(MappedPages(source, kHalf, 2 * kHalf), 0u);
  EXPECT_EQ(CachedPages(source, kHalf, 2 * kHalf), 0u) << "it read uncached pages";
  // The content is the file's.
  EXPECT_EQ(source.data()[12345], static_cast<std::uint8_t>(12345 * 7 + 1));
  EXPECT_EQ(source.data()[kHalf + 5], static_cast<std::uint8_t>((kHalf + 5) * 7 + 1));
  MemorySource({1, 2, 3})->MapInCachedPages();  // a buffer: nothing to do
  fs::remove_all(dir);
}

TEST(AtomicFile, CommitRenamesAndAbandonRemoves) {
  fs::path dir = TempDir();
  fs::path dest = dir / "out.bin";
  {
    auto f = AtomicFile::Create(dest.string());
    ASSERT_TRUE(f.ok());
    f->Write("abcd");
    f->WriteLe(0x0201, 2);
    const std::uint8_t patch[] = {'X'};
    f->WriteAt(1, patch);
    EXPECT_FALSE(fs::exists(dest));  // nothing under the final name yet
    ASSERT_TRUE(f->Commit().ok());
  }
  std::ifstream in(dest, std::ios::binary);
  std::string content((std::istreambuf_iterator<char>(in)), {});
  EXPECT_EQ(content, std::string("aXcd\x01\x02", 6));

  {
    auto f = AtomicFile::Create((dir / "abandoned.bin").string());
    ASSERT_TRUE(f.ok());
    f->Write("partial");
  }
  EXPECT_FALSE(fs::exists(dir / "abandoned.bin"));
  int leftovers = 0;
  for (auto& e : fs::directory_iterator(dir)) leftovers += e.path().filename() != "out.bin";
  EXPECT_EQ(leftovers, 0);
  fs::remove_all(dir);
}

TEST(AtomicFile, UnwritableDirectoryIsAnIOErrorNamingTheFile) {
  // A missing directory (root ignores permission bits, so no chmod test).
  auto f = AtomicFile::Create("/nonexistent-dir-backstep/out.bin");
  ASSERT_FALSE(f.ok());
  EXPECT_EQ(f.status().code(), StatusCode::kIOError);
  EXPECT_NE(f.status().message().find("/nonexistent-dir-backstep/out.bin"), std::string::npos);
}

}  // namespace
}  // namespace backstep::core
