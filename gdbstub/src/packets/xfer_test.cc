#include "packets/xfer.h"

#include <gtest/gtest.h>

namespace backstep::gdbstub {
namespace {

TEST(XferChunkTest, WholeDocumentIsLast) {
  EXPECT_EQ(XferChunk("<target/>", 0, 0x1000, 0x4000), "l<target/>");
}

TEST(XferChunkTest, ShortReadSaysMore) {
  EXPECT_EQ(XferChunk("<target/>", 0, 4, 0x4000), "m<tar");
  EXPECT_EQ(XferChunk("<target/>", 4, 4, 0x4000), "mget/");
  EXPECT_EQ(XferChunk("<target/>", 8, 4, 0x4000), "l>");
}

TEST(XferChunkTest, OffsetAtOrPastEndIsAnEmptyLast) {
  EXPECT_EQ(XferChunk("abc", 3, 10, 0x4000), "l");
  EXPECT_EQ(XferChunk("abc", ~0ull, 10, 0x4000), "l");
}

TEST(XferChunkTest, EscapesAndFitsThePacket) {
  // Budget 5: marker + 4 bytes of escaped data = "a" "}\x03" "b" -> 3 source bytes.
  EXPECT_EQ(XferChunk("a#bcd", 0, 100, 5), std::string("ma}\x03") + "b");
  EXPECT_EQ(XferChunk("a#bcd", 3, 100, 5), "lcd");
  // An escape pair is never split.
  EXPECT_EQ(XferChunk("ab#", 0, 100, 4), "mab");
}

TEST(XferChunkTest, HugeLengthIsBoundedByThePacket) {
  std::string document(100000, 'x');
  std::string chunk = XferChunk(document, 0, ~0ull, 0x4000);
  EXPECT_EQ(chunk.size(), 0x4000u);
  EXPECT_EQ(chunk[0], 'm');
}

}  // namespace
}  // namespace backstep::gdbstub
