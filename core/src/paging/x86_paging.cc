#include "paging/x86_paging.h"

#include <algorithm>
#include <cassert>
#include <optional>
#include <string>

#include "backstep/core/number.h"
#include "util/hex.h"

namespace backstep::core {
namespace {

constexpr std::uint64_t kCr0Pg = 1ull << 31;
constexpr std::uint64_t kCr4Pse = 1ull << 4;
constexpr std::uint64_t kCr4Pae = 1ull << 5;
constexpr std::uint64_t kCr4La57 = 1ull << 12;
constexpr std::uint64_t kEferLma = 1ull << 10;
constexpr std::uint64_t kPresent = 1;
constexpr std::uint64_t kPageSizeBit = 1ull << 7;
constexpr std::uint64_t k4K = 1ull << 12;

// One level of a walk with 8-byte entries.
struct Level {
  const char* name;
  unsigned shift;            // lowest virtual-address bit of the index
  std::uint64_t index_mask;  // 0x1ff, or 0x3 for PAE's PDPT
  bool may_be_large;         // PS (bit 7) maps a page at this level
};

constexpr Level kPml5 = {"PML5E", 48, 0x1ff, false};
constexpr Level kPml4 = {"PML4E", 39, 0x1ff, false};
constexpr Level kPdpt = {"PDPTE", 30, 0x1ff, true};
constexpr Level kPaePdpt = {"PDPTE", 30, 0x3, false};
constexpr Level kPd = {"PDE", 21, 0x1ff, true};
constexpr Level kPt = {"PTE", 12, 0x1ff, false};

std::uint64_t PhysMask(unsigned bits) {
  bits = std::clamp(bits, 32u, 52u);
  return (std::uint64_t{1} << bits) - 1;
}

Status WalkError(Address va, const char* level, Address entry, const char* what) {
  return Status::NotFound("page walk of " + HexU64(va) + ": " + level + " at physical " +
                          HexU64(entry) + " " + what);
}

// Reads a little-endian entry of `size` bytes (4 or 8).
std::optional<std::uint64_t> ReadEntry(const PhysicalReadFn& read, Address at, unsigned size) {
  std::uint8_t bytes[8] = {};
  if (!read(at, std::span<std::uint8_t>(bytes, size))) return std::nullopt;
  std::uint64_t v = 0;
  for (unsigned i = 0; i < size; ++i) v |= std::uint64_t{bytes[i]} << (8 * i);
  return v;
}

// Walks 8-byte-entry levels (long mode and PAE) from `table`.
Expected<Translation> Walk8(std::span<const Level> levels, Address table,
                            const PagingRegisters& regs, Address va, const PhysicalReadFn& read) {
  const std::uint64_t frame_mask = PhysMask(regs.max_phys_bits) & ~(k4K - 1);
  for (const Level& level : levels) {
    const Address at = table + ((va >> level.shift) & level.index_mask) * 8;
    const std::optional<std::uint64_t> entry = ReadEntry(read, at, 8);
    if (!entry) return WalkError(va, level.name, at, "is unknown");
    if ((*entry & kPresent) == 0) return WalkError(va, level.name, at, "is not present");
    if (level.may_be_large && (*entry & kPageSizeBit) != 0) {
      if (level.shift == 30 && !regs.has_1g_pages) {
        return WalkError(va, level.name, at, "maps a 1 GiB page but the CPU has none");
      }
      // The frame bits below the large page's size are its offset, not
      // part of a table address: mask them off before adding va's offset.
      const std::uint64_t size = std::uint64_t{1} << level.shift;
      return Translation{(*entry & frame_mask & ~(size - 1)) | (va & (size - 1)), size};
    }
    table = *entry & frame_mask;
  }
  return Translation{table | (va & (k4K - 1)), k4K};
}

Expected<Translation> WalkLongMode(const PagingRegisters& regs, Address va,
                                   const PhysicalReadFn& read) {
  const bool la57 = (regs.cr4 & kCr4La57) != 0;
  const unsigned va_bits = la57 ? 57 : 48;
  const auto canonical =
      static_cast<Address>(static_cast<std::int64_t>(va << (64 - va_bits)) >> (64 - va_bits));
  // A non-canonical address faults on the CPU before any table is read;
  // walking it would index the tables with its high bits and invent a
  // translation no instruction could have used.
  if (canonical != va) {
    return Status::InvalidArgument("page walk of " + HexU64(va) + ": not canonical (" +
                                   std::to_string(va_bits) + "-bit virtual addresses)");
  }
  static constexpr Level kLevels[] = {kPml5, kPml4, kPdpt, kPd, kPt};
  // The low 12 bits of CR3 (PCID, or PWT/PCD) are outside the frame mask.
  const Address root = regs.cr3 & PhysMask(regs.max_phys_bits) & ~(k4K - 1);
  return Walk8(std::span(kLevels).subspan(la57 ? 0 : 1), root, regs, va, read);
}

Expected<Translation> Walk32(const PagingRegisters& regs, Address va, const PhysicalReadFn& read) {
  const Address pd = regs.cr3 & 0xfffff000;
  const Address pde_at = pd + (va >> 22) * 4;
  const std::optional<std::uint64_t> pde = ReadEntry(read, pde_at, 4);
  if (!pde) return WalkError(va, "PDE", pde_at, "is unknown");
  if ((*pde & kPresent) == 0) return WalkError(va, "PDE", pde_at, "is not present");
  if ((*pde & kPageSizeBit) != 0 && (regs.cr4 & kCr4Pse) != 0) {
    Address physical = (*pde & 0xffc00000) | (va & 0x3fffff);
    if (regs.has_pse36) {
      // PSE-36: PDE bits 20:13 are physical bits 39:32.
      physical |= ((*pde >> 13) & 0xff) << 32;
      physical &= PhysMask(std::min(regs.max_phys_bits, 40u));
    }
    return Translation{physical, 4ull << 20};
  }
  const Address pte_at = (*pde & 0xfffff000) + ((va >> 12) & 0x3ff) * 4;
  const std::optional<std::uint64_t> pte = ReadEntry(read, pte_at, 4);
  if (!pte) return WalkError(va, "PTE", pte_at, "is unknown");
  if ((*pte & kPresent) == 0) return WalkError(va, "PTE", pte_at, "is not present");
  return Translation{(*pte & 0xfffff000) | (va & 0xfff), k4K};
}

std::optional<std::uint64_t> Property(const TraceHeader& header, std::string_view key) {
  for (const auto& [k, v] : header.properties) {
    if (k == key) return ParseNumber(v);
  }
  return std::nullopt;
}

}  // namespace

Expected<Translation> TranslateX86(const PagingRegisters& regs, Address virtual_address,
                                   const PhysicalReadFn& read) {
  if ((regs.cr0 & kCr0Pg) == 0) return Translation{virtual_address, 0};
  if ((regs.efer & kEferLma) != 0) return WalkLongMode(regs, virtual_address, read);
  if (virtual_address > 0xffffffff) {
    return Status::InvalidArgument("page walk of " + HexU64(virtual_address) +
                                   ": above 4 GiB in 32-bit paging mode");
  }
  if ((regs.cr4 & kCr4Pae) != 0) {
    // NOTE: the CPU loads PAE's four PDPTEs when CR3 is written; reading them
    // from memory at this position differs only if the guest rewrote its
    // PDPT without reloading CR3.
    static constexpr Level kLevels[] = {kPaePdpt, kPd, kPt};
    return Walk8(kLevels, regs.cr3 & 0xffffffe0, regs, virtual_address, read);
  }
  return Walk32(regs, virtual_address, read);
}

PagingRegisters PagingFromState(const RegisterFile& regs, const TraceHeader& header) {
  assert(&regs.arch() == &X86_64());
  static const RegisterId kIds[4] = {*X86_64().Find("cr0"), *X86_64().Find("cr3"),
                                     *X86_64().Find("cr4"), *X86_64().Find("efer")};
  PagingRegisters p;
  std::uint64_t* fields[4] = {&p.cr0, &p.cr3, &p.cr4, &p.efer};
  for (int i = 0; i < 4; ++i) {
    if (regs.known(kIds[i])) {
      *fields[i] = regs.u64(kIds[i]);
    } else {
      p.registers_known = false;
    }
  }
  if (auto bits = Property(header, "cpuid_max_phy_addr"); bits && *bits >= 32 && *bits <= 52) {
    p.max_phys_bits = static_cast<unsigned>(*bits);
  }
  if (auto v = Property(header, "cpuid_1gb_pages")) p.has_1g_pages = *v != 0;
  if (auto v = Property(header, "cpuid_pse36")) p.has_pse36 = *v != 0;
  return p;
}

}  // namespace backstep::core
