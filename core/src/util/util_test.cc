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
