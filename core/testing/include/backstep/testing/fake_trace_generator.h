// Random FakeTraces for cross-checks of the index, replay and search against
// the naive oracle (trace_oracle.h).
//
// A generated trace has one to several threads that run in random runs, and
// events of every kind: instructions (rip set to a pc from a small pool so
// breakpoints hit often, plus register operations of every RegisterOp on
// registers of several sizes), syscalls, interrupts, exceptions and markers
// with descriptions, and optionally tfile-like frames that clear registers
// and memory before writing what they "collected". Memory writes are 1..64
// bytes, some crossing page boundaries, with a hot page that gets many
// writes; recorded reads are consistent with the true memory (the generator
// keeps the true machine state, of which the trace reports only part).
//
// Physical traces (AddressKind::kPhysical) get 4-level long-mode paging in
// the image: virtual [0, 1 GiB) maps identically (one 1 GiB page) and the
// virtual pages at kMappedVirtual map to kMappedPhysical (4 KiB pages).
//
// Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <optional>

#include "backstep/testing/fake_trace.h"

namespace backstep::core::testing {

struct FakeTraceOptions {
  std::uint64_t seed = 1;
  std::size_t events = 2000;
  int threads = 1;
  AddressKind address_kind = AddressKind::kVirtual;
  bool records_reads = false;
  // tfile-like frames (kFrame + kEventClearsMemory|kEventClearsRegisters).
  bool clears = false;
  // The image knows every byte of its regions (else about half of them).
  bool full_image = true;
  // Initial registers all known (else some are unknown).
  bool full_registers = true;
  bool reader_copies_data = false;  // FakeTrace::reader_copies_data
  // Non-instruction events describe event notes and mapping changes
  // (backstep/core/event_notes.h) instead of "other event": system calls,
  // some mapping, signals, exits (the same random choices otherwise).
  bool notes = false;
};

// Physical traces: virtual pages [kMappedVirtual, +kMappedPages*4K) map to
// physical [kMappedPhysical, ...).
inline constexpr Address kMappedVirtual = 0x40000000;
inline constexpr Address kMappedPhysical = 0x200000;
inline constexpr int kMappedPages = 3;

FakeTrace GenerateFakeTrace(const FakeTraceOptions& options);

// The virtual-to-physical mapping of generated physical traces (nullopt:
// unmapped). Registers never change the paging state.
std::optional<Address> FakeTranslate(Address virtual_address);

// Pcs of the generated pc pool (for breakpoints).
std::vector<Address> FakePcPool();

// Data regions of a generated trace (for watches and reads): [start, end).
std::vector<std::pair<Address, Address>> FakeDataRegions(AddressKind kind);

}  // namespace backstep::core::testing
