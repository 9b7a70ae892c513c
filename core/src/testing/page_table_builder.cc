#include "testing/page_table_builder.h"

#include <algorithm>
#include <cassert>

namespace backstep::core::testing {
namespace {

constexpr std::uint64_t kFrameMask = 0x000ffffffffff000ull;

unsigned Index(Address va, int level) { return (va >> (12 + 9 * (level - 1))) & 0x1ff; }

}  // namespace

PageTableBuilder::PageTableBuilder(Address table_base, bool five_level)
    : table_base_(table_base), top_level_(five_level ? 5 : 4) {
  assert((table_base & 0xfff) == 0);
  NewTable();
}

Address PageTableBuilder::NewTable() {
  const Address at = table_base_ + tables_.size() * 4096;
  tables_.emplace(at, std::vector<std::uint64_t>(512, 0));
  return at;
}

std::uint64_t& PageTableBuilder::Entry(Address table, unsigned index) {
  return tables_.at(table)[index];
}

Address PageTableBuilder::Walk(Address va, int leaf_level) {
  Address table = table_base_;
  for (int level = top_level_; level > leaf_level; --level) {
    std::uint64_t& entry = Entry(table, Index(va, level));
    if ((entry & kPresent) == 0) {
      // std::map keeps `entry` valid while NewTable() inserts.
      const Address next = NewTable();
      entry = next | kDefaultFlags;
    }
    assert((entry & kLarge) == 0 && "mapping inside an existing large page");
    table = entry & kFrameMask;
  }
  return table;
}

void PageTableBuilder::Map4K(Address va, Address pa, std::uint64_t flags) {
  assert((va & 0xfff) == 0 && (pa & 0xfff) == 0);
  Entry(Walk(va, 1), Index(va, 1)) = pa | flags;
}

void PageTableBuilder::Map2M(Address va, Address pa, std::uint64_t flags) {
  assert((va & 0x1fffff) == 0 && (pa & 0x1fffff) == 0);
  std::uint64_t& entry = Entry(Walk(va, 2), Index(va, 2));
  assert((entry & kPresent) == 0 || (entry & kLarge) != 0);
  entry = pa | flags | kLarge;
}

void PageTableBuilder::Map1G(Address va, Address pa, std::uint64_t flags) {
  assert((va & 0x3fffffff) == 0 && (pa & 0x3fffffff) == 0);
  std::uint64_t& entry = Entry(Walk(va, 3), Index(va, 3));
  assert((entry & kPresent) == 0 || (entry & kLarge) != 0);
  entry = pa | flags | kLarge;
}

Address PageTableBuilder::EntryAddress(int level, Address va) const {
  Address table = table_base_;
  for (int l = top_level_; l > level; --l) {
    const std::uint64_t entry = tables_.at(table)[Index(va, l)];
    assert((entry & kPresent) != 0 && (entry & kLarge) == 0);
    table = entry & kFrameMask;
  }
  return table + Index(va, level) * 8;
}

std::vector<std::pair<Address, std::vector<std::uint8_t>>> PageTableBuilder::Pages() const {
  std::vector<std::pair<Address, std::vector<std::uint8_t>>> pages;
  for (const auto& [address, entries] : tables_) {
    std::vector<std::uint8_t> bytes(4096);
    for (std::size_t i = 0; i < entries.size(); ++i) {
      for (int b = 0; b < 8; ++b)
        bytes[i * 8 + b] = static_cast<std::uint8_t>(entries[i] >> (8 * b));
    }
    pages.emplace_back(address, std::move(bytes));
  }
  return pages;
}

void PageTableBuilder::WriteTo(std::vector<std::uint8_t>& image, Address image_base) const {
  for (const auto& [address, bytes] : Pages()) {
    assert(address >= image_base);
    const std::size_t at = address - image_base;
    if (image.size() < at + bytes.size()) image.resize(at + bytes.size(), 0);
    std::copy(bytes.begin(), bytes.end(), image.begin() + at);
  }
}

}  // namespace backstep::core::testing
