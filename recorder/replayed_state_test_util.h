// ReplayedState: a recording's state replayed event by event, for the
// recorder's tests (record_replay_test.cc against a live program,
// emu/emu_crosscheck_test.cc between the two engines): the registers plus a
// sparse memory of known bytes, starting from the trace's initial image.
//
// Costs: 8 KiB per touched page. Thread-safety: none (test use).
#pragma once

#include <cstdint>
#include <map>

#include "backstep/core/arch.h"
#include "backstep/core/register_file.h"
#include "backstep/core/trace_reader.h"

namespace backstep::record::test_util {

struct ReplayedState {
  static constexpr std::uint64_t kPageSize = 4096;
  struct Page {
    std::uint8_t data[kPageSize] = {};
    std::uint8_t known[kPageSize] = {};
  };

  explicit ReplayedState(const core::TraceReader& reader) : regs(core::X86_64()) {
    regs = reader.InitialRegisters().at(0).second;
    for (const core::MemoryRegion& r : reader.header().regions) {
      for (core::Address a = r.start; a < r.start + r.size; a += kPageSize) {
        Page& p = pages[a / kPageSize];
        reader.ReadInitialMemory(a, p.data, p.known);
      }
    }
  }
  // The event's registers and writes (its reads change nothing).
  void Apply(const core::Event& e) {
    for (const core::RegisterWrite& w : e.registers) regs.Apply(w);
    for (const core::MemoryAccess& w : e.writes) {
      for (std::size_t i = 0; i < w.data.size(); ++i) Set(w.address + i, w.data[i]);
    }
  }
  void Set(core::Address a, std::uint8_t b) {
    Page& p = pages[a / kPageSize];
    p.data[a % kPageSize] = b;
    p.known[a % kPageSize] = 1;
  }
  // Byte at `a`, or -1 when unknown.
  int Byte(core::Address a) const {
    auto it = pages.find(a / kPageSize);
    if (it == pages.end() || !it->second.known[a % kPageSize]) return -1;
    return it->second.data[a % kPageSize];
  }
  // Byte at `a`; unknown bytes read as 0 (a fresh mapping's untouched bytes).
  std::uint8_t ByteOrZero(core::Address a) const {
    const int b = Byte(a);
    return b < 0 ? 0 : static_cast<std::uint8_t>(b);
  }
  std::uint64_t U64(const char* name) const { return regs.u64(*core::X86_64().Find(name)); }

  core::RegisterFile regs;
  std::map<core::Address, Page> pages;
};

}  // namespace backstep::record::test_util
