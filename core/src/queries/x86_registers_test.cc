// The capstone -> X86_64() register mapping (queries/x86_registers.h):
// every constant it uses names the table register it claims to, sub-
// registers are the right bytes, and the architecture's write extensions
// (32-bit zero extension, VEX zeroing) hold.
#include "queries/x86_registers.h"

#include <capstone/capstone.h>

#include <string>

#include "gtest/gtest.h"

namespace backstep::core::x86 {
namespace {

RegisterSlice Slice(std::string_view name, std::uint8_t lo, std::uint8_t hi) {
  auto id = X86_64().Find(name);
  EXPECT_TRUE(id.has_value()) << name;
  return {id.value_or(kNoRegister), lo, hi};
}

TEST(X86Registers, MapsCapstoneIdsToTheTable) {
  struct Case {
    unsigned reg;
    std::vector<RegisterSlice> slices;
  };
  const Case cases[] = {
      {X86_REG_RAX, {Slice("rax", 0, 8)}},
      {X86_REG_EBX, {Slice("rbx", 0, 4)}},
      {X86_REG_CX, {Slice("rcx", 0, 2)}},
      {X86_REG_DH, {Slice("rdx", 1, 2)}},
      {X86_REG_SIL, {Slice("rsi", 0, 1)}},
      {X86_REG_RDI, {Slice("rdi", 0, 8)}},
      {X86_REG_EBP, {Slice("rbp", 0, 4)}},
      {X86_REG_RSP, {Slice("rsp", 0, 8)}},
      {X86_REG_R8, {Slice("r8", 0, 8)}},
      {X86_REG_R15D, {Slice("r15", 0, 4)}},
      {X86_REG_R11W, {Slice("r11", 0, 2)}},
      {X86_REG_R9B, {Slice("r9", 0, 1)}},
      {X86_REG_RIP, {Slice("rip", 0, 8)}},
      {X86_REG_EFLAGS, {Slice("eflags", 0, 4)}},
      {X86_REG_CS, {Slice("cs", 0, 4)}},
      {X86_REG_SS, {Slice("ss", 0, 4)}},
      {X86_REG_DS, {Slice("ds", 0, 4)}},
      {X86_REG_ES, {Slice("es", 0, 4)}},
      {X86_REG_FS, {Slice("fs", 0, 4)}},
      {X86_REG_GS, {Slice("gs", 0, 4)}},
      {X86_REG_XMM0, {Slice("xmm0", 0, 16)}},
      {X86_REG_XMM15, {Slice("xmm15", 0, 16)}},
      {X86_REG_XMM16, {Slice("xmm16", 0, 16)}},
      {X86_REG_YMM3, {Slice("xmm3", 0, 16), Slice("ymm3h", 0, 16)}},
      {X86_REG_YMM31, {Slice("xmm31", 0, 16), Slice("ymm31h", 0, 16)}},
      {X86_REG_ZMM7, {Slice("xmm7", 0, 16), Slice("ymm7h", 0, 16), Slice("zmm7h", 0, 32)}},
      {X86_REG_ZMM31, {Slice("xmm31", 0, 16), Slice("ymm31h", 0, 16), Slice("zmm31h", 0, 32)}},
      {X86_REG_K0, {Slice("k0", 0, 8)}},
      {X86_REG_K7, {Slice("k7", 0, 8)}},
  };
  for (const Case& c : cases) {
    auto got = BytesOf(c.reg);
    ASSERT_TRUE(got.has_value()) << c.reg;
    EXPECT_EQ(got->slices, c.slices) << c.reg;
  }
  for (unsigned n = 0; n < 8; ++n) {
    auto r = BytesOf(X86_REG_R8 + n);
    ASSERT_TRUE(r.has_value());
    EXPECT_EQ(r->slices.front().id, *X86_64().Find("r" + std::to_string(8 + n)));
  }
  EXPECT_EQ(SegmentBaseOf(X86_REG_FS), X86_64().Find("fs_base"));
  EXPECT_EQ(SegmentBaseOf(X86_REG_GS), X86_64().Find("gs_base"));
  EXPECT_FALSE(SegmentBaseOf(X86_REG_DS).has_value());
  EXPECT_FALSE(BytesOf(X86_REG_ST0).has_value());
  EXPECT_FALSE(BytesOf(X86_REG_MM0).has_value());
}

TEST(X86Registers, WritesExtendAsTheArchitectureSays) {
  EXPECT_EQ(WrittenBytesOf(X86_REG_EAX, false)->slices,
            std::vector<RegisterSlice>{Slice("rax", 0, 8)});
  EXPECT_EQ(WrittenBytesOf(X86_REG_AX, false)->slices,
            std::vector<RegisterSlice>{Slice("rax", 0, 2)});
  EXPECT_EQ(WrittenBytesOf(X86_REG_XMM1, false)->slices,
            std::vector<RegisterSlice>{Slice("xmm1", 0, 16)});
  EXPECT_EQ(WrittenBytesOf(X86_REG_XMM1, true)->slices,
            (std::vector<RegisterSlice>{Slice("xmm1", 0, 16), Slice("ymm1h", 0, 16),
                                        Slice("zmm1h", 0, 32)}));
}

TEST(X86Registers, BytesArithmetic) {
  const RegisterBytes ymm = *BytesOf(X86_REG_YMM2);
  EXPECT_EQ(ymm.size(), 32u);
  EXPECT_TRUE(ymm.Overlaps(*BytesOf(X86_REG_XMM2)));
  EXPECT_FALSE(ymm.Overlaps(*BytesOf(X86_REG_XMM3)));
  EXPECT_EQ(ymm.OffsetOf(Slice("ymm2h", 4, 16)), 20u);
  EXPECT_FALSE(ymm.OffsetOf(Slice("rax", 0, 8)).has_value());
  EXPECT_EQ(ymm.Sub(12, 8).slices,
            (std::vector<RegisterSlice>{Slice("xmm2", 12, 16), Slice("ymm2h", 0, 4)}));
  EXPECT_FALSE(BytesOf(X86_REG_AH)->Overlaps(*BytesOf(X86_REG_AL)));
  EXPECT_TRUE(BytesOf(X86_REG_AH)->Overlaps(*BytesOf(X86_REG_AX)));
}

}  // namespace
}  // namespace backstep::core::x86
