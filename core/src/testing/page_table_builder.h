// PageTableBuilder: builds x86-64 long-mode page tables for tests.
//
// Tables are allocated as consecutive 4 KiB pages of physical memory from
// `table_base` upwards (the root table first, so cr3() == table_base); the
// caller places them in its fake physical memory or synthetic trace with
// Pages() or WriteTo(). Mappings must not overlap: mapping a small page
// inside an existing large page, or a large page over an existing table,
// asserts.
//
//   PageTableBuilder b(0x100000);
//   b.Map4K(0x400000, 0x5000);
//   b.Map2M(0x7f0000000000, 0x200000);
//   regs.cr3 = b.cr3();
//   for (const auto& [pa, bytes] : b.Pages()) memory.Write(pa, bytes);
//
// Thread-safety: a value type; not synchronized.
#pragma once

#include <cstdint>
#include <map>
#include <utility>
#include <vector>

#include "backstep/core/types.h"

namespace backstep::core::testing {

class PageTableBuilder {
 public:
  // Entry bits.
  static constexpr std::uint64_t kPresent = 1ull << 0;
  static constexpr std::uint64_t kWritable = 1ull << 1;
  static constexpr std::uint64_t kUser = 1ull << 2;
  static constexpr std::uint64_t kLarge = 1ull << 7;  // PS
  static constexpr std::uint64_t kNoExecute = 1ull << 63;
  static constexpr std::uint64_t kDefaultFlags = kPresent | kWritable | kUser;

  // `table_base`: physical address of the first table page (4 KiB aligned).
  // `five_level`: build PML5 tables (for CR4.LA57) instead of PML4.
  explicit PageTableBuilder(Address table_base, bool five_level = false);

  // Map one page. `va` and `pa` must be aligned to the page size; `flags`
  // go into the leaf entry (kLarge is added for 2 MiB and 1 GiB pages);
  // intermediate entries get kDefaultFlags.
  void Map4K(Address va, Address pa, std::uint64_t flags = kDefaultFlags);
  void Map2M(Address va, Address pa, std::uint64_t flags = kDefaultFlags);
  void Map1G(Address va, Address pa, std::uint64_t flags = kDefaultFlags);

  // Value for CR3 (the root table's address; no PCID).
  Address cr3() const { return table_base_; }
  // Physical address of the entry that translates `va` at `level` (5 = PML5E,
  // 4 = PML4E, 3 = PDPTE, 2 = PDE, 1 = PTE). REQUIRES: the table of that level
  // exists for `va` (a mapping through it was made).
  Address EntryAddress(int level, Address va) const;
  // Every table page, (physical address, 4096 bytes), in address order.
  std::vector<std::pair<Address, std::vector<std::uint8_t>>> Pages() const;
  // Copies the tables into `image`, which holds physical memory starting at
  // `image_base`; grows `image` (zero-filled) if it is too small.
  void WriteTo(std::vector<std::uint8_t>& image, Address image_base = 0) const;

 private:
  // The table of `leaf_level` for `va`, creating the tables above it.
  Address Walk(Address va, int leaf_level);
  std::uint64_t& Entry(Address table, unsigned index);
  Address NewTable();

  Address table_base_;
  int top_level_;
  std::map<Address, std::vector<std::uint64_t>> tables_;  // address -> 512 entries
};

}  // namespace backstep::core::testing
