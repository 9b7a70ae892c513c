// AVX-512 (EVEX) and mask-register instructions of the forms glibc's
// *_evex string functions use, which capstone 4 cannot decode: their reads
// and writes, decoded through InsnDecoder (zydis_fallback.h). The bytes are
// GNU as's encodings of the instructions named beside them.
#include <gtest/gtest.h>
#include <sys/user.h>

#include <cstdint>
#include <cstring>
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

// The ranges a decoded instruction gave, against those expected, in order.
void ExpectRanges(const std::vector<Range>& got, const std::vector<Range>& want) {
  ASSERT_EQ(got.size(), want.size());
  for (std::size_t i = 0; i < got.size(); ++i) {
    EXPECT_EQ(got[i].start, want[i].start);
    EXPECT_EQ(got[i].size, want[i].size);
    EXPECT_EQ(got[i].maybe, want[i].maybe);
  }
}

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
    ASSERT_NO_FATAL_FAILURE(ExpectRanges(reads, c.reads));
    ASSERT_NO_FATAL_FAILURE(ExpectRanges(writes, c.writes));
  }
}

// Gathers: their lanes from the index and mask registers (EVEX: an opmask;
// VEX: a vector register's lane top bits) and the XSAVE image before them.
TEST(ZydisFallback, GatherLanes) {
  InsnDecoder decoder;
  struct {
    const char* what;
    std::vector<std::uint8_t> bytes;
    std::uint8_t index_register, index_size, element_size, lanes, mask_register;
    bool opmask;
    std::uint8_t scale;
  } const cases[] = {
      {"vpgatherdd 0x10(%rax,%zmm1,4),%zmm0{%k1}",
       {0x62, 0xf2, 0x7d, 0x49, 0x90, 0x44, 0x88, 0x04},
       1,
       4,
       4,
       16,
       1,
       true,
       4},
      {"vgatherqpd (%rdi,%ymm3,8),%ymm2{%k2}",
       {0x62, 0xf2, 0xfd, 0x2a, 0x93, 0x14, 0xdf},
       3,
       8,
       8,
       4,
       2,
       true,
       8},
      {"vpgatherdq %ymm4,(%rdx,%xmm5,2),%ymm6",
       {0xc4, 0xe2, 0xdd, 0x90, 0x34, 0x6a},
       5,
       4,
       8,
       4,
       4,
       false,
       2},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.what);
    const Decoded& d = decoder.Decode(kPc, c.bytes);
    EXPECT_EQ(d.size, c.bytes.size());
    EXPECT_FALSE(d.unknown_reads);
    ASSERT_TRUE(d.gather.has_value());
    EXPECT_EQ(d.gather->index_register, c.index_register);
    EXPECT_EQ(d.gather->index_size, c.index_size);
    EXPECT_EQ(d.gather->element_size, c.element_size);
    EXPECT_EQ(d.gather->lanes, c.lanes);
    EXPECT_EQ(d.gather->mask_register, c.mask_register);
    EXPECT_EQ(d.gather->opmask, c.opmask);
    EXPECT_EQ(d.gather->address.scale, c.scale);
  }
  // vpgatherdq's lanes 0 and 1 enabled (xmm4's bytes 7 and 15), 2 and 3 not;
  // xmm5's dword indices 1, -2, 3, 4 (sign-extended).
  const Decoded& d = decoder.Decode(kPc, cases[2].bytes);
  std::vector<std::uint8_t> xstate(4096, 0);
  const std::int32_t indices[4] = {1, -2, 3, 4};
  std::memcpy(&xstate[160 + 16 * 5], indices, sizeof indices);
  xstate[160 + 16 * 4 + 7] = 0x80;
  xstate[160 + 16 * 4 + 15] = 0xff;
  user_regs_struct r{};
  r.rdx = 0x5000;
  std::vector<Range> reads;
  InsnDecoder::GatherReads(*d.gather, r, CpuLayout(), xstate, &reads);
  ASSERT_EQ(reads.size(), 2u);
  EXPECT_EQ(reads[0].start, 0x5002u);
  EXPECT_EQ(reads[0].size, 8u);
  EXPECT_EQ(reads[1].start, 0x5000u - 4);
  EXPECT_EQ(reads[1].size, 8u);
}

// Masked EVEX reads: only the elements whose opmask bit is set are read
// (the CPU neither reads nor faults on the others), one range per run.
TEST(ZydisFallback, MaskedReadsAreTheEnabledElements) {
  user_regs_struct r{};
  r.rdi = 0x10000;
  r.rsi = 0x20000;
  struct Case {
    const char* what;
    std::vector<std::uint8_t> bytes;
    unsigned mask_register;
    std::uint64_t opmask;
    std::vector<Range> reads;
  };
  const std::vector<Case> cases = {
      {"vmovdqu8 (%rdi),%zmm16{%k1}{z}",
       {0x62, 0xe1, 0x7f, 0xc9, 0x6f, 0x07},
       1,
       0x7,
       {{0x10000, 3}}},
      {"vmovdqu8 (%rdi),%zmm16{%k1}{z}, k1 = 0", {0x62, 0xe1, 0x7f, 0xc9, 0x6f, 0x07}, 1, 0, {}},
      {"vmovdqu8 (%rdi),%zmm16{%k1}{z}, two runs",
       {0x62, 0xe1, 0x7f, 0xc9, 0x6f, 0x07},
       1,
       0xf00000000000000full,
       {{0x10000, 4}, {0x1003c, 4}}},
      {"vmovdqu32 0x10(%rsi),%ymm17{%k2}",
       {0x62, 0xe1, 0x7e, 0x2a, 0x6f, 0x8e, 0x10, 0x00, 0x00, 0x00},
       2,
       0xf05,  // bits 8-11: past the 8 elements
       {{0x20010, 4}, {0x20018, 4}}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.what);
    InsnDecoder decoder;
    const Decoded& d = decoder.Decode(kPc, c.bytes);
    EXPECT_EQ(d.size, c.bytes.size());
    EXPECT_FALSE(d.unknown_reads);
    std::vector<Range> reads;
    InsnDecoder::Reads(d, r, r, &reads);
    EXPECT_TRUE(reads.empty()) << "a masked read is not a whole-operand read";
    ASSERT_EQ(d.masked_reads.size(), 1u);
    EXPECT_EQ(d.masked_reads[0].mask_register, c.mask_register);
    InsnDecoder::MaskedReads(d.masked_reads[0], r, c.opmask, &reads);
    ASSERT_NO_FATAL_FAILURE(ExpectRanges(reads, c.reads));
  }
  // Without an opmask (k0) the whole operand is read.
  InsnDecoder decoder;
  const Decoded& d =
      decoder.Decode(kPc, std::vector<std::uint8_t>{0x62, 0xe1, 0x7f, 0x48, 0x6f, 0x07});
  EXPECT_TRUE(d.masked_reads.empty());
  std::vector<Range> reads;
  InsnDecoder::Reads(d, r, r, &reads);
  ASSERT_EQ(reads.size(), 1u);
  EXPECT_EQ(reads[0].size, 64u);
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
