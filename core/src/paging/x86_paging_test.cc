#include "paging/x86_paging.h"

#include <gtest/gtest.h>

#include <map>

#include "testing/page_table_builder.h"
#include "util/hex.h"

namespace backstep::core {
namespace {

using testing::PageTableBuilder;

constexpr std::uint64_t kPg = 1ull << 31;
constexpr std::uint64_t kPse = 1ull << 4;
constexpr std::uint64_t kPae = 1ull << 5;
constexpr std::uint64_t kLa57 = 1ull << 12;
constexpr std::uint64_t kPcide = 1ull << 17;
constexpr std::uint64_t kLmaLme = (1ull << 10) | (1ull << 8);

// Sparse physical memory; bytes never written are unknown.
class FakePhysical {
 public:
  void Write(Address at, std::span<const std::uint8_t> bytes) {
    for (std::size_t i = 0; i < bytes.size(); ++i) bytes_[at + i] = bytes[i];
  }
  void WriteLe(Address at, std::uint64_t value, int size) {
    for (int i = 0; i < size; ++i) bytes_[at + i] = static_cast<std::uint8_t>(value >> (8 * i));
  }
  std::uint64_t ReadLe(Address at) const {
    std::uint64_t v = 0;
    for (int i = 0; i < 8; ++i) v |= std::uint64_t{bytes_.at(at + i)} << (8 * i);
    return v;
  }
  void Forget(Address at, std::size_t size) {
    for (std::size_t i = 0; i < size; ++i) bytes_.erase(at + i);
  }
  void Load(const PageTableBuilder& b) {
    for (const auto& [at, page] : b.Pages()) Write(at, page);
  }
  PhysicalReadFn reader() const {
    return [this](Address at, std::span<std::uint8_t> out) {
      for (std::size_t i = 0; i < out.size(); ++i) {
        auto it = bytes_.find(at + i);
        if (it == bytes_.end()) return false;
        out[i] = it->second;
      }
      return true;
    };
  }

 private:
  std::map<Address, std::uint8_t> bytes_;
};

PagingRegisters LongMode(Address cr3) {
  PagingRegisters r;
  r.cr0 = kPg | 1;
  r.cr3 = cr3;
  r.cr4 = kPae;
  r.efer = kLmaLme;
  return r;
}

Translation Ok(const Expected<Translation>& t) {
  EXPECT_TRUE(t.ok()) << t.status().ToString();
  return t.ok() ? *t : Translation{~0ull, 0};
}

TEST(X86PagingTest, NotPagedIsIdentity) {
  FakePhysical mem;
  PagingRegisters r;
  r.cr3 = 0x1000;
  Translation t = Ok(TranslateX86(r, 0xffffffff12345678, mem.reader()));
  EXPECT_EQ(t.physical, 0xffffffff12345678u);
  EXPECT_EQ(t.page_size, 0u);
}

TEST(X86PagingTest, FourLevel4K) {
  PageTableBuilder b(0x100000);
  b.Map4K(0x7fff12345000, 0xabc000);
  b.Map4K(0xffff800000001000, 0x3000);  // kernel half
  FakePhysical mem;
  mem.Load(b);
  const PagingRegisters r = LongMode(b.cr3());
  Translation t = Ok(TranslateX86(r, 0x7fff12345123, mem.reader()));
  EXPECT_EQ(t.physical, 0xabc123u);
  EXPECT_EQ(t.page_size, 4096u);
  EXPECT_EQ(Ok(TranslateX86(r, 0xffff800000001fff, mem.reader())).physical, 0x3fffu);
}

TEST(X86PagingTest, LargePages) {
  PageTableBuilder b(0x100000);
  b.Map2M(0x40200000, 0x1e00000);
  b.Map1G(0x80000000, 0x140000000);
  FakePhysical mem;
  mem.Load(b);
  PagingRegisters r = LongMode(b.cr3());
  Translation t = Ok(TranslateX86(r, 0x402abcde, mem.reader()));
  EXPECT_EQ(t.physical, 0x1eabcdeu);
  EXPECT_EQ(t.page_size, 2u << 20);
  t = Ok(TranslateX86(r, 0x80000000 + 0x12345678, mem.reader()));
  EXPECT_EQ(t.physical, 0x140000000u + 0x12345678);
  EXPECT_EQ(t.page_size, 1u << 30);

  r.has_1g_pages = false;  // PS in a PDPTE is then a reserved bit
  auto bad = TranslateX86(r, 0x80000000, mem.reader());
  ASSERT_FALSE(bad.ok());
  EXPECT_TRUE(bad.status().IsNotFound());
  EXPECT_NE(bad.status().message().find("PDPTE"), std::string::npos);
}

TEST(X86PagingTest, FiveLevel) {
  PageTableBuilder b(0x200000, /*five_level=*/true);
  const Address va = 0x00ff800012345000;  // needs bits above 47
  b.Map4K(va, 0x9000);
  b.Map4K(0xff00000000000000, 0xa000);  // canonical with 57 bits
  FakePhysical mem;
  mem.Load(b);
  PagingRegisters r = LongMode(b.cr3());
  r.cr4 |= kLa57;
  EXPECT_EQ(Ok(TranslateX86(r, va + 0x10, mem.reader())).physical, 0x9010u);
  EXPECT_EQ(Ok(TranslateX86(r, 0xff00000000000008, mem.reader())).physical, 0xa008u);
  auto bad = TranslateX86(r, 0x0100000000000000, mem.reader());
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), StatusCode::kInvalidArgument);
  // Clearing PML5E present fails at that level.
  mem.WriteLe(b.EntryAddress(5, va), 0, 8);
  bad = TranslateX86(r, va, mem.reader());
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("PML5E"), std::string::npos);
}

TEST(X86PagingTest, NonCanonicalFourLevel) {
  FakePhysical mem;
  const PagingRegisters r = LongMode(0x1000);
  for (Address va : {0x0000800000000000ull, 0xffff7fffffffffffull, 0x00ff800012345000ull}) {
    auto t = TranslateX86(r, va, mem.reader());
    ASSERT_FALSE(t.ok()) << std::hex << va;
    EXPECT_EQ(t.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(t.status().message().find("canonical"), std::string::npos);
  }
}

TEST(X86PagingTest, Cr3LowBitsAreIgnored) {
  PageTableBuilder b(0x100000);
  b.Map4K(0x1000, 0x7000);
  FakePhysical mem;
  mem.Load(b);
  PagingRegisters r = LongMode(b.cr3() | 0x123);  // PCID 0x123
  r.cr4 |= kPcide;
  EXPECT_EQ(Ok(TranslateX86(r, 0x1004, mem.reader())).physical, 0x7004u);
  r = LongMode(b.cr3() | 0x18);  // PWT | PCD
  EXPECT_EQ(Ok(TranslateX86(r, 0x1004, mem.reader())).physical, 0x7004u);
}

TEST(X86PagingTest, HighEntryBitsAreMasked) {
  PageTableBuilder b(0x100000);
  const std::uint64_t flags = PageTableBuilder::kDefaultFlags | PageTableBuilder::kNoExecute |
                              (0xfull << 59);  // NX + protection key
  b.Map4K(0x5000, 0x8000, flags);
  b.Map2M(0x200000, 0x400000, flags);
  FakePhysical mem;
  mem.Load(b);
  // A frame bit above a 40-bit physical address width.
  const Address pte = b.EntryAddress(1, 0x5000);
  mem.WriteLe(pte, mem.ReadLe(pte) | (1ull << 45), 8);
  PagingRegisters r = LongMode(b.cr3());
  r.max_phys_bits = 40;
  EXPECT_EQ(Ok(TranslateX86(r, 0x5010, mem.reader())).physical, 0x8010u);
  EXPECT_EQ(Ok(TranslateX86(r, 0x200010, mem.reader())).physical, 0x400010u);
  r.max_phys_bits = 52;
  EXPECT_EQ(Ok(TranslateX86(r, 0x5010, mem.reader())).physical, (1ull << 45) | 0x8010);
}

TEST(X86PagingTest, NotPresentAtEachLevel) {
  const Address va = 0x7f0000123000;
  const char* names[] = {"", "PTE", "PDE", "PDPTE", "PML4E"};
  for (int level = 1; level <= 4; ++level) {
    PageTableBuilder b(0x100000);
    b.Map4K(va, 0x9000);
    FakePhysical mem;
    mem.Load(b);
    const Address entry = b.EntryAddress(level, va);
    mem.WriteLe(entry, mem.ReadLe(entry) & ~1ull, 8);
    auto t = TranslateX86(LongMode(b.cr3()), va, mem.reader());
    ASSERT_FALSE(t.ok()) << level;
    EXPECT_TRUE(t.status().IsNotFound());
    const std::string& m = t.status().message();
    EXPECT_NE(m.find(std::string(names[level]) + " at physical " + HexU64(entry)),
              std::string::npos)
        << m;
    EXPECT_NE(m.find("not present"), std::string::npos) << m;
    EXPECT_NE(m.find("0x7f0000123000"), std::string::npos) << m;
  }
}

TEST(X86PagingTest, UnknownTableBytes) {
  PageTableBuilder b(0x100000);
  b.Map4K(0x1000, 0x7000);
  FakePhysical mem;
  mem.Load(b);
  const Address pde = b.EntryAddress(2, 0x1000);
  mem.Forget(pde + 3, 1);
  auto t = TranslateX86(LongMode(b.cr3()), 0x1000, mem.reader());
  ASSERT_FALSE(t.ok());
  EXPECT_TRUE(t.status().IsNotFound());
  EXPECT_NE(t.status().message().find("PDE"), std::string::npos);
  EXPECT_NE(t.status().message().find("unknown"), std::string::npos);
}

TEST(X86PagingTest, Pae) {
  FakePhysical mem;
  // PDPT at 0x3020 (32-byte aligned), PD at 0x4000, PT at 0x5000.
  mem.Write(0x3000, std::vector<std::uint8_t>(0x40, 0));
  mem.Write(0x4000, std::vector<std::uint8_t>(4096, 0));
  mem.Write(0x5000, std::vector<std::uint8_t>(4096, 0));
  mem.WriteLe(0x3020 + 1 * 8, 0x4000 | 1, 8);          // PDPTE[1]: 1 GiB..2 GiB
  mem.WriteLe(0x4000 + 0 * 8, 0x600000 | 0x83, 8);     // PDE[0]: 2 MiB page
  mem.WriteLe(0x4000 + 1 * 8, 0x5000 | 1, 8);          // PDE[1] -> PT
  mem.WriteLe(0x5000 + 3 * 8, 0x123456789000 | 1, 8);  // PTE[3]: above 4 GiB
  PagingRegisters r;
  r.cr0 = kPg | 1;
  r.cr3 = 0x3020;
  r.cr4 = kPae;
  Translation t = Ok(TranslateX86(r, 0x40012345, mem.reader()));
  EXPECT_EQ(t.physical, 0x612345u);
  EXPECT_EQ(t.page_size, 2u << 20);
  t = Ok(TranslateX86(r, 0x40200000 + 0x3abc, mem.reader()));
  EXPECT_EQ(t.physical, 0x123456789abcu);
  EXPECT_EQ(t.page_size, 4096u);
  auto bad = TranslateX86(r, 0x80000000, mem.reader());  // PDPTE[2] not present
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("PDPTE at physical 0x3030"), std::string::npos)
      << bad.status().message();
  bad = TranslateX86(r, 0x100000000, mem.reader());
  EXPECT_EQ(bad.status().code(), StatusCode::kInvalidArgument);
}

TEST(X86PagingTest, ThirtyTwoBit) {
  FakePhysical mem;
  mem.Write(0x1000, std::vector<std::uint8_t>(4096, 0));
  mem.Write(0x2000, std::vector<std::uint8_t>(4096, 0));
  mem.WriteLe(0x1000 + 1 * 4, 0x2000 | 1, 4);                       // PDE[1] -> PT
  mem.WriteLe(0x2000 + 2 * 4, 0x5000 | 1, 4);                       // PTE[2]
  mem.WriteLe(0x1000 + 3 * 4, 0x00c00000 | 0x81 | (0x5 << 13), 4);  // PDE[3]: 4 MiB + PSE-36
  PagingRegisters r;
  r.cr0 = kPg | 1;
  r.cr3 = 0x1000;
  Translation t = Ok(TranslateX86(r, (1u << 22) | (2u << 12) | 0x34, mem.reader()));
  EXPECT_EQ(t.physical, 0x5034u);
  EXPECT_EQ(t.page_size, 4096u);

  r.cr4 = kPse;
  t = Ok(TranslateX86(r, (3u << 22) | 0x12345, mem.reader()));
  EXPECT_EQ(t.physical, 0xc12345u);
  EXPECT_EQ(t.page_size, 4u << 20);
  r.has_pse36 = true;
  r.max_phys_bits = 40;
  EXPECT_EQ(Ok(TranslateX86(r, (3u << 22) | 0x12345, mem.reader())).physical, 0x500c12345u);

  auto bad = TranslateX86(r, 0, mem.reader());  // PDE[0] not present
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("PDE at physical 0x1000 "), std::string::npos);
  bad = TranslateX86(r, (1u << 22), mem.reader());  // PTE[0] not present
  EXPECT_NE(bad.status().message().find("PTE at physical 0x2000 "), std::string::npos);
  EXPECT_EQ(TranslateX86(r, 0x100000000, mem.reader()).status().code(),
            StatusCode::kInvalidArgument);
}

TEST(PagingFromStateTest, RegistersAndProperties) {
  RegisterFile regs(X86_64());
  regs.SetU64(*X86_64().Find("cr0"), 0x80050033);
  regs.SetU64(*X86_64().Find("cr3"), 0x1aa000);
  regs.SetU64(*X86_64().Find("cr4"), 0x3506f0);
  regs.SetU64(*X86_64().Find("msr_c0000080"), 0xd01);
  TraceHeader header;
  PagingRegisters p = PagingFromState(regs, header);
  EXPECT_EQ(p.cr0, 0x80050033u);
  EXPECT_EQ(p.cr3, 0x1aa000u);
  EXPECT_EQ(p.cr4, 0x3506f0u);
  EXPECT_EQ(p.efer, 0xd01u);
  EXPECT_TRUE(p.registers_known);
  EXPECT_EQ(p.max_phys_bits, 52u);
  EXPECT_TRUE(p.has_1g_pages);
  EXPECT_FALSE(p.has_pse36);

  header.properties = {{"tool", "x"},
                       {"cpuid_max_phy_addr", "0x28"},
                       {"cpuid_1gb_pages", "0"},
                       {"cpuid_pse36", "1"}};
  p = PagingFromState(regs, header);
  EXPECT_EQ(p.max_phys_bits, 40u);
  EXPECT_FALSE(p.has_1g_pages);
  EXPECT_TRUE(p.has_pse36);

  header.properties = {{"cpuid_max_phy_addr", "36"}};
  EXPECT_EQ(PagingFromState(regs, header).max_phys_bits, 36u);
  header.properties = {{"cpuid_max_phy_addr", "bogus"}};
  EXPECT_EQ(PagingFromState(regs, header).max_phys_bits, 52u);

  regs.SetUnknown(*X86_64().Find("cr4"));
  p = PagingFromState(regs, header);
  EXPECT_FALSE(p.registers_known);
  EXPECT_EQ(p.cr4, 0u);
}

}  // namespace
}  // namespace backstep::core
