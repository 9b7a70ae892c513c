#include "testing/page_table_builder.h"

#include <gtest/gtest.h>

namespace backstep::core::testing {
namespace {

std::uint64_t EntryAt(const std::vector<std::uint8_t>& image, Address at) {
  std::uint64_t v = 0;
  for (int i = 0; i < 8; ++i) v |= std::uint64_t{image[at + i]} << (8 * i);
  return v;
}

TEST(PageTableBuilderTest, BuildsFourLevelTables) {
  PageTableBuilder b(0x10000);
  EXPECT_EQ(b.cr3(), 0x10000u);
  b.Map4K(0x401000, 0x7000);
  b.Map4K(0x402000, 0x8000);  // same PT
  b.Map2M(0x600000, 0x200000);
  b.Map1G(0x40000000, 0x80000000);
  const auto pages = b.Pages();
  // PML4, PDPT, PD, PT: the 2 MiB and 1 GiB pages reuse existing tables.
  ASSERT_EQ(pages.size(), 4u);
  for (std::size_t i = 0; i < pages.size(); ++i) {
    EXPECT_EQ(pages[i].first, 0x10000u + 0x1000 * i);
    EXPECT_EQ(pages[i].second.size(), 4096u);
  }
  std::vector<std::uint8_t> image;
  b.WriteTo(image);
  ASSERT_EQ(image.size(), 0x14000u);
  EXPECT_EQ(EntryAt(image, b.EntryAddress(1, 0x401000)), 0x7000u | PageTableBuilder::kDefaultFlags);
  EXPECT_EQ(EntryAt(image, b.EntryAddress(1, 0x402000)), 0x8000u | PageTableBuilder::kDefaultFlags);
  EXPECT_EQ(EntryAt(image, b.EntryAddress(2, 0x600000)),
            0x200000u | PageTableBuilder::kDefaultFlags | PageTableBuilder::kLarge);
  EXPECT_EQ(EntryAt(image, b.EntryAddress(3, 0x40000000)),
            0x80000000u | PageTableBuilder::kDefaultFlags | PageTableBuilder::kLarge);
  EXPECT_EQ(b.EntryAddress(4, 0x401000), 0x10000u);  // PML4E[0]
  EXPECT_EQ(EntryAt(image, 0x10000) & ~0xfffull, 0x11000u);
}

TEST(PageTableBuilderTest, WriteToWithBase) {
  PageTableBuilder b(0x200000, /*five_level=*/true);
  b.Map4K(0x1000, 0x3000);
  std::vector<std::uint8_t> image(16, 0xee);
  b.WriteTo(image, 0x200000);
  EXPECT_EQ(image.size(), 5u * 4096);  // PML5, PML4, PDPT, PD, PT
  EXPECT_EQ(EntryAt(image, 0), 0x201000u | PageTableBuilder::kDefaultFlags);
}

}  // namespace
}  // namespace backstep::core::testing
