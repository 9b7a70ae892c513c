// x86 page walk: virtual (linear) address -> physical address.
//
// REVEN traces hold physical memory; the debugger asks for virtual
// addresses. TranslateX86() walks the paging structures that the CPU state at
// a position points to, reading them from that position's physical memory
// through a callback (docs/formats/reven.md §1.7). Supported modes:
//   * not paged (CR0.PG = 0): identity, page_size 0;
//   * long mode (EFER.LMA = 1): 4-level, or 5-level with CR4.LA57; 4 KiB,
//     2 MiB and (with has_1g_pages) 1 GiB pages;
//   * PAE without long mode (CR4.PAE = 1): 3 levels, 4 KiB and 2 MiB pages;
//   * 32-bit paging: 2 levels of 4-byte entries, 4 KiB pages and, with
//     CR4.PSE, 4 MiB pages (PSE-36 high physical bits with has_pse36).
// Only translation is modelled: access rights (R/W, U/S, NX, protection
// keys, SMEP/SMAP) are ignored, as a debugger may read any mapped byte.
// Segmentation is the caller's business (64-bit mode: FS/GS bases only).
//
// Translations are not cached here: the paging structures may change at any
// position. An access crossing a page boundary must be translated page by
// page (Translation::page_size tells where the page ends).
//
// Thread-safety: pure functions; safe to call concurrently if `read` is.
#pragma once

#include <cstdint>
#include <functional>
#include <span>

#include "backstep/core/expected.h"
#include "backstep/core/register_file.h"
#include "backstep/core/trace_reader.h"
#include "backstep/core/types.h"

namespace backstep::core {

// The CPU state a page walk depends on.
struct PagingRegisters {
  std::uint64_t cr0 = 0, cr3 = 0, cr4 = 0, efer = 0;
  // Physical address width M (CPUID 0x80000008 EAX[7:0]); frame addresses
  // keep bits [M-1:12] of an entry. Values outside 32..52 are clamped.
  unsigned max_phys_bits = 52;
  bool has_1g_pages = true;  // CPUID 0x80000001 EDX[26]
  bool has_pse36 = false;    // CPUID 1 EDX[17]
  // Set by PagingFromState: false when any of cr0/cr3/cr4/efer is unknown
  // (those are then 0). TranslateX86 ignores it.
  bool registers_known = true;
};

// Reads `out.size()` bytes of physical memory; returns false if any byte is
// unknown/unmapped.
using PhysicalReadFn = std::function<bool(Address physical, std::span<std::uint8_t> out)>;

struct Translation {
  Address physical;
  // Size of the page holding the address: 4 KiB, 2 MiB, 1 GiB, 4 MiB, or 0
  // for "not paged" (identity; no page boundary to respect).
  std::uint64_t page_size;
};

// Translates one virtual address.
// Errors:
//   * InvalidArgument: non-canonical address in long mode, or an address
//     above 4 GiB in a 32-bit paging mode;
//   * NotFound: a paging-structure entry is not present, unknown (the read
//     failed) or sets a reserved PS bit; the message names the level ("PML4E",
//     "PDPTE", ...), the entry's physical address and the virtual address.
// Cost: one `read` call per level (at most 5).
Expected<Translation> TranslateX86(const PagingRegisters& regs, Address virtual_address,
                                   const PhysicalReadFn& read);

// Fills PagingRegisters from a thread's registers (cr0, cr3, cr4, efer of
// X86_64(); unknown ones read as 0 and clear registers_known) and the trace
// header's properties "cpuid_max_phy_addr", "cpuid_1gb_pages",
// "cpuid_pse36" (values like "0x28" or "1"; absent or unparsable -> the
// defaults above). REQUIRES: &regs.arch() == &X86_64().
PagingRegisters PagingFromState(const RegisterFile& regs, const TraceHeader& header);

}  // namespace backstep::core
