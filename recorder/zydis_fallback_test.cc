// AVX-512 (EVEX) and mask-register instructions of the forms glibc's
// *_evex string functions use, which capstone 4 cannot decode: their reads
// and writes, decoded through InsnDecoder (zydis_fallback.h). The bytes are
// GNU as's encodings of the instructions named beside them.
#include <gtest/gtest.h>
#include <sys/user.h>

#include <cstdint>
#include <vector>

#include "recorder/insn_decoder.h"

namespace backstep::record {
namespace {

struct Expect {
  const char* what;
  std::vector<std::uint8_t> bytes;
  std::vector<Range> reads, writes;
};

constexpr core::Address kPc = 0x400000;

TEST(ZydisFallback, EvexReadsAndWrites) {
  user_regs_struct r{};
  r.rdi = 0x10000;
  r.rsi = 0x20000;
  r.rax = 0x30;
  const std::vector<Expect> cases = {
      {"vpcmpeqb (%rdi),%ymm16,%k0", {0x62, 0xf1, 0x7d, 0x20, 0x74, 0x07}, {{0x10000, 32}}, {}},
      {"kmovd %k0,%eax", {0xc5, 0xfb, 0x93, 0xc0}, {}, {}},
      {"vptestmb 0x20(%rdi,%rax,1),%ymm17,%k1",
       {0x62, 0xf2, 0x75, 0x20, 0x26, 0x4c, 0x07, 0x01},
       {{0x10050, 32}},
       {}},
      {"vmovdqu64 (%rsi),%ymm17", {0x62, 0xe1, 0xfe, 0x28, 0x6f, 0x0e}, {{0x20000, 32}}, {}},
      {"vmovdqu8 %ymm16,0x8(%rdi){%k1}",
       {0x62, 0xe1, 0x7f, 0x29, 0x7f, 0x87, 0x08, 0x00, 0x00, 0x00},
       {},
       {{0x10008, 32, true}}},
      {"vpaddd (%rax){1to8},%ymm16,%ymm17", {0x62, 0xe1, 0x7d, 0x30, 0xfe, 0x08}, {{0x30, 4}}, {}},
      {"vmovdqu64 0x40(%rsi),%zmm16",
       {0x62, 0xe1, 0xfe, 0x48, 0x6f, 0x46, 0x01},
       {{0x20040, 64}},
       {}},
      {"vmovdqu64 0x100(%rip),%ymm16",
       {0x62, 0xe1, 0xfe, 0x28, 0x6f, 0x05, 0x00, 0x01, 0x00, 0x00},
       {{kPc + 10 + 0x100, 32}},
       {}},
      {"kmovd (%rdi),%k1", {0xc4, 0xe1, 0xf9, 0x90, 0x0f}, {{0x10000, 4}}, {}},
      {"kmovq %k1,(%rdi)", {0xc4, 0xe1, 0xf8, 0x91, 0x0f}, {}, {{0x10000, 8}}},
      {"vpminub (%rdi),%ymm17,%ymm18", {0x62, 0xe1, 0x75, 0x20, 0xda, 0x17}, {{0x10000, 32}}, {}},
      {"vpcmpneqb 0x20(%rdi),%ymm16,%k2",
       {0x62, 0xf3, 0x7d, 0x20, 0x3f, 0x57, 0x01, 0x04},
       {{0x10020, 32}},
       {}},
  };
  for (const Expect& c : cases) {
    SCOPED_TRACE(c.what);
    InsnDecoder decoder;
    const Decoded& d = decoder.Decode(kPc, c.bytes);
    EXPECT_EQ(d.size, c.bytes.size());
    EXPECT_TRUE(d.fp);
    EXPECT_FALSE(d.unknown_reads);
    EXPECT_FALSE(d.unknown_writes);
    std::vector<Range> reads, writes;
    InsnDecoder::Reads(d, r, r, &reads);
    InsnDecoder::Writes(d, r, r, &writes);
    ASSERT_EQ(reads.size(), c.reads.size());
    for (std::size_t i = 0; i < reads.size(); ++i) {
      EXPECT_EQ(reads[i].start, c.reads[i].start);
      EXPECT_EQ(reads[i].size, c.reads[i].size);
    }
    ASSERT_EQ(writes.size(), c.writes.size());
    for (std::size_t i = 0; i < writes.size(); ++i) {
      EXPECT_EQ(writes[i].start, c.writes[i].start);
      EXPECT_EQ(writes[i].size, c.writes[i].size);
      EXPECT_EQ(writes[i].maybe, c.writes[i].maybe);
    }
  }
}

// Bytes no decoder knows: no silent "reads nothing".
TEST(ZydisFallback, UndecodableIsMarked) {
  InsnDecoder decoder;
  const std::vector<std::uint8_t> bytes = {0x0f, 0x04};  // no such opcode
  const Decoded& d = decoder.Decode(kPc, bytes);
  EXPECT_EQ(d.size, 0u);
  EXPECT_TRUE(d.unknown_reads);
  EXPECT_TRUE(d.unknown_writes);
}

}  // namespace
}  // namespace backstep::record
