// CRC-32C and the snappy framing layer: published test vectors, exact
// bytes, every chunk type, damage, and Tell/Seek at every byte.
#include <gtest/gtest.h>

#include <random>

#include "formats/usercorn/crc32c.h"
#include "formats/usercorn/snappy_stream.h"
#include "testing/usercorn_fixtures.h"

namespace backstep::core {
namespace {

using Bytes = std::vector<std::uint8_t>;

Bytes Of(std::string_view s) { return Bytes(s.begin(), s.end()); }

TEST(Crc32cTest, PublishedVectors) {
  // RFC 3720 B.4 and the usual check value.
  EXPECT_EQ(Crc32c(Of("123456789")), 0xe3069283u);
  EXPECT_EQ(Crc32c(Bytes(32, 0)), 0x8a9136aau);
  EXPECT_EQ(Crc32c(Bytes(32, 0xff)), 0x62a8ab43u);
  Bytes inc(32);
  for (int i = 0; i < 32; ++i) inc[i] = static_cast<std::uint8_t>(i);
  EXPECT_EQ(Crc32c(inc), 0x46dd794eu);
  EXPECT_EQ(Crc32c({}), 0u);
  // Masked values, computed independently (Python, bit by bit).
  EXPECT_EQ(MaskCrc32c(0xe3069283u), 0xc78ab0e5u);
  EXPECT_EQ(MaskCrc32c(0), 0xa282ead8u);
}

TEST(Crc32cTest, MatchesTheBitwiseReferenceAtEveryLengthAndAlignment) {
  std::mt19937 rng(7);
  Bytes data(300);
  for (auto& b : data) b = static_cast<std::uint8_t>(rng());
  for (std::size_t start = 0; start < 9; ++start) {
    for (std::size_t n = 0; start + n <= data.size(); n += 7) {
      auto piece = std::span<const std::uint8_t>(data).subspan(start, n);
      ASSERT_EQ(Crc32c(piece), testing::ReferenceCrc32c(piece)) << start << "+" << n;
    }
  }
  // Continuation: crc(a + b) == crc(b, crc(a)).
  auto all = std::span<const std::uint8_t>(data);
  EXPECT_EQ(Crc32c(all.subspan(100), Crc32c(all.first(100))), Crc32c(all));
}

TEST(SnappyFrameWriterTest, ExactBytesOfAStoredChunk) {
  Bytes out;
  SnappyFrameWriter w(
      [&](std::span<const std::uint8_t> b) { out.insert(out.end(), b.begin(), b.end()); },
      SnappyChunkMode::kUncompressed);
  w.Write(Of("abc"));
  EXPECT_TRUE(out.empty());  // buffered until a chunk is full or flushed
  w.Flush();
  const Bytes expected = {0xff, 0x06, 0x00, 0x00, 's',  'N',  'a',  'P', 'p', 'Y', 0x01,
                          0x07, 0x00, 0x00, 0x6e, 0x57, 0xf1, 0x21, 'a', 'b', 'c'};
  EXPECT_EQ(out, expected);
}

TEST(SnappyFrameWriterTest, AutoModeFollowsGoSnappy) {
  for (const bool zeros : {true, false}) {
    Bytes out;
    SnappyFrameWriter w(
        [&](std::span<const std::uint8_t> b) { out.insert(out.end(), b.begin(), b.end()); });
    Bytes data(70000);
    std::mt19937 rng(3);
    if (!zeros) {
      for (auto& b : data) b = static_cast<std::uint8_t>(rng());
    }
    w.Write(data);
    w.Flush();
    // Identifier, a 65536-byte chunk, a 4464-byte one.
    ASSERT_GT(out.size(), 10u);
    EXPECT_EQ(out[10], zeros ? 0x00 : 0x01);
    SnappyStream s(out, 0, "mem");
    ASSERT_TRUE(s.Start().ok());
    Bytes back;
    ASSERT_TRUE(s.ReadAppend(data.size(), &back).ok());
    EXPECT_EQ(back, data);
    std::uint8_t b;
    EXPECT_TRUE(s.Peek(&b).IsOutOfRange());
    EXPECT_FALSE(s.truncated());
  }
}

// A stream of `data` in chunks of every size, both chunk types.
TEST(SnappyStreamTest, ReadsHandBuiltStreamsAndSeeksAtEveryByte) {
  Bytes data(1000);
  for (std::size_t i = 0; i < data.size(); ++i) data[i] = static_cast<std::uint8_t>(i * 7 / 3);
  for (const bool compressed : {false, true}) {
    for (const std::size_t chunk : {1u, 13u, 256u, 1000u}) {
      SCOPED_TRACE(std::to_string(chunk) + (compressed ? " compressed" : " stored"));
      const Bytes file = testing::HandSnappyFrames(data, chunk, compressed);
      SnappyStream s(file, 0, "mem");
      ASSERT_TRUE(s.Start().ok());
      std::vector<SnappyPos> positions;
      for (std::size_t i = 0; i < data.size(); ++i) {
        positions.push_back(s.Tell());
        std::uint8_t peeked = 0, read = 0;
        ASSERT_TRUE(s.Peek(&peeked).ok());
        ASSERT_TRUE(s.Read(&read, 1).ok());
        ASSERT_EQ(peeked, data[i]);
        ASSERT_EQ(read, data[i]);
      }
      std::uint8_t b;
      EXPECT_TRUE(s.Peek(&b).IsOutOfRange());
      SnappyStream other(file, 0, "mem");
      ASSERT_TRUE(other.Start().ok());
      for (std::size_t i = 0; i < data.size(); i += 1 + i / 50) {
        ASSERT_TRUE(other.Seek(positions[i]).ok()) << i;
        Bytes rest;
        ASSERT_TRUE(other.ReadAppend(data.size() - i, &rest).ok()) << i;
        ASSERT_TRUE(std::equal(rest.begin(), rest.end(), data.begin() + i)) << i;
      }
    }
  }
}

Bytes WithChunks(std::initializer_list<Bytes> chunks) {
  Bytes out(testing::HandSnappyFrames({}, 1, false));
  for (const Bytes& c : chunks) out.insert(out.end(), c.begin(), c.end());
  return out;
}

// One stored chunk of `s` (without the identifier).
Bytes Stored(std::string_view s) {
  const Bytes framed = testing::HandSnappyFrames(Of(s), 65536, false);
  return Bytes(framed.begin() + 10, framed.end());
}

TEST(SnappyStreamTest, SkipsPaddingSkippableEmptyAndRepeatedIdentifiers) {
  const Bytes file = WithChunks({Stored("ab"),
                                 {0xfe, 0x02, 0x00, 0x00, 0x00, 0x00},  // padding
                                 {0x80, 0x01, 0x00, 0x00, 0x55},        // skippable
                                 {0xff, 0x06, 0x00, 0x00, 's', 'N', 'a', 'P', 'p', 'Y'},
                                 {0x01, 0x04, 0x00, 0x00, 0xd8, 0xea, 0x82, 0xa2},  // empty data
                                 Stored("cd")});
  SnappyStream s(file, 0, "mem");
  ASSERT_TRUE(s.Start().ok());
  Bytes out;
  ASSERT_TRUE(s.ReadAppend(4, &out).ok());
  EXPECT_EQ(out, Of("abcd"));
}

TEST(SnappyStreamTest, DamageIsCorruptionNamingTheChunk) {
  Bytes bad_crc = Stored("hello");
  bad_crc[4] ^= 1;
  Bytes big = {0x01, 0x05, 0x00, 0x01};  // 65541 bytes of stored data: too much
  big.resize(4 + 65541);
  Bytes big_block = {0x00, 0x09, 0x00, 0x00, 0, 0, 0, 0, 0x81, 0x80, 0x08};  // claims 131073
  big_block.resize(4 + 9);
  const std::vector<std::pair<std::string, Bytes>> cases = {
      {"CRC mismatch", WithChunks({bad_crc})},
      {"reserved unskippable chunk type 0x2", WithChunks({{0x02, 0x00, 0x00, 0x00}})},
      {"shorter than its CRC", WithChunks({{0x01, 0x02, 0x00, 0x00, 1, 2}})},
      {"at most 65536", WithChunks({big})},
      {"decompresses to 131073", WithChunks({big_block})},
      {"corrupt snappy block", WithChunks({{0x00, 0x06, 0x00, 0x00, 0, 0, 0, 0, 0x05, 0x7f}})},
      {"malformed stream identifier",
       WithChunks({{0xff, 0x06, 0x00, 0x00, 's', 'N', 'a', 'P', 'p', 'y'}})},
  };
  for (const auto& [what, file] : cases) {
    SCOPED_TRACE(what);
    SnappyStream s(file, 0, "f.ucir");
    ASSERT_TRUE(s.Start().ok());
    std::uint8_t b;
    const Status st = s.Peek(&b);
    EXPECT_TRUE(st.IsCorruption()) << st.ToString();
    EXPECT_NE(st.message().find(what), std::string::npos) << st.ToString();
    EXPECT_NE(st.message().find("f.ucir: snappy stream at offset 0xa"), std::string::npos)
        << st.ToString();
  }
}

TEST(SnappyStreamTest, StartWantsTheIdentifier) {
  for (const Bytes& file : {Of("\x01\x04\x00\x00zzzz"), Of("\xff\x06\x00\x00sNaP")}) {
    SnappyStream s(file, 0, "mem");
    EXPECT_TRUE(s.Start().IsCorruption());
  }
  SnappyStream empty(Bytes{}, 0, "mem");
  ASSERT_TRUE(empty.Start().ok());
  std::uint8_t b;
  EXPECT_TRUE(empty.Peek(&b).IsOutOfRange());
}

TEST(SnappyStreamTest, TruncationIsOutOfRangeAndSaysSo) {
  const Bytes file = testing::HandSnappyFrames(Of("0123456789"), 4, false);
  for (std::size_t n = 10; n < file.size(); ++n) {
    SnappyStream s(std::span<const std::uint8_t>(file).first(n), 0, "mem");
    ASSERT_TRUE(s.Start().ok());
    Bytes out;
    const Status st = s.ReadAppend(10, &out);
    ASSERT_TRUE(st.IsOutOfRange()) << n;
    // Chunks of 12, 12 and 10 bytes after the identifier; whole ones before
    // the cut are delivered.
    EXPECT_EQ(out.size(), n >= 34 ? 8u : n >= 22 ? 4u : 0u) << n;
    const bool at_boundary = n == 10 || n == 22 || n == 34;
    EXPECT_EQ(s.truncated(), !at_boundary) << n;
  }
}

TEST(SnappyStreamTest, SeekRejectsPositionsOutsideTheStream) {
  const Bytes file = testing::HandSnappyFrames(Of("abcdef"), 3, false);
  SnappyStream s(file, 0, "mem");
  ASSERT_TRUE(s.Start().ok());
  EXPECT_EQ(s.Seek({file.size() + 1, 0}).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(s.Seek({10, 4}).code(), StatusCode::kInvalidArgument);  // past the chunk's 3 bytes
  EXPECT_EQ(s.Seek({0, 1}).code(), StatusCode::kInvalidArgument);   // the identifier
  EXPECT_EQ(s.Seek({10, 70000}).code(), StatusCode::kInvalidArgument);
  ASSERT_TRUE(s.Seek({10, 2}).ok());
  std::uint8_t b;
  ASSERT_TRUE(s.Read(&b, 1).ok());
  EXPECT_EQ(b, 'c');
}

TEST(SnappyFrameWriterTest, RoundTripsEveryModeAndChunkSize) {
  std::mt19937 rng(5);
  Bytes data(5000);
  for (std::size_t i = 0; i < data.size(); ++i)
    data[i] = i % 3 ? 0 : static_cast<std::uint8_t>(rng());
  for (auto mode :
       {SnappyChunkMode::kAuto, SnappyChunkMode::kCompressed, SnappyChunkMode::kUncompressed}) {
    for (std::size_t chunk : {1u, 100u, 65536u}) {
      Bytes out;
      SnappyFrameWriter w(
          [&](std::span<const std::uint8_t> b) { out.insert(out.end(), b.begin(), b.end()); }, mode,
          chunk);
      for (std::size_t at = 0; at < data.size(); at += 777) {
        w.Write(std::span<const std::uint8_t>(data).subspan(
            at, std::min<std::size_t>(777, data.size() - at)));
      }
      w.Flush();
      EXPECT_EQ(w.bytes_in(), data.size());
      SnappyStream s(out, 0, "mem");
      ASSERT_TRUE(s.Start().ok());
      Bytes back;
      ASSERT_TRUE(s.ReadAppend(data.size(), &back).ok());
      EXPECT_EQ(back, data);
      if (mode != SnappyChunkMode::kAuto) {
        EXPECT_EQ(out[10], mode == SnappyChunkMode::kCompressed ? 0x00 : 0x01);
      }
    }
  }
}

}  // namespace
}  // namespace backstep::core
