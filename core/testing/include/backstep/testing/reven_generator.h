// Synthetic REVEN traces: a streaming generator of realistic trace.bin files
// (and optionally their trace.cache), for tests and benchmarks.
//
// The trace is what PANDA would record of a small program looping forever
// on one CPU: a few hundred distinct instruction addresses in a dozen
// functions with loops and calls; pushes, pops, calls and returns writing
// the stack; stores spread over 255 heap pages (some of them 300 bytes, which
// needs the 0xff length escape); x87 and zmm register writes (PANDA's
// `top`/x87status/x87tags conversions); rip += n, rsp += 8 and eflags bit
// operations; events with 15 or more memory or register entries
// (continuation chunks); "other" events (interrupts, page faults) every
// `other_event_every` events; occasional writes outside the declared
// physical regions (a local APIC register). With `with_paging`, 4-level page
// tables (testing/page_table_builder.h) map the code, stack and heap
// virtual ranges onto scattered physical pages; without it, cr0.PG = 0 and
// virtual = physical.
//
// Two features are planted for search tests: one pc executed exactly once
// (an interrupt handler's iret at `far_pc`, late in the trace), and one
// heap byte range written exactly once (`once_*`), also late.
//
// Cost: streaming; memory is the 8 MiB physical image plus the cache points
// (each holds the pages dirtied since the previous one). About 10^7 events
// in 2 seconds, 16 bytes per event on disk. Files are written atomically
// and are reproducible: same options, same bytes. The generator's state
// lives in reven_gen_cpu.h (internal).
//
// Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "backstep/core/expected.h"
#include "backstep/core/trace_reader.h"

namespace backstep::core::testing {

struct RevenGenOptions {
  std::uint64_t events = 10000;
  std::uint64_t seed = 1;
  bool with_paging = true;
  std::uint64_t other_event_every = 997;  // 0: no "other" events
  // A trace.cache point every this many contexts (0: no cache file).
  std::uint64_t cache_every = 0;
  // false: leave event_count 0, as a producer that died.
  bool patch_event_count = true;
  std::uint8_t phy_size = 5;  // bytes per physical address (PANDA: ceil(bits / 8))
};

// One 4 KiB page of the virtual-to-physical mapping.
struct RevenGenPage {
  Address virtual_address = 0;
  Address physical_address = 0;
};

// A named virtual range ("code", "stack", "heap").
struct RevenGenRange {
  std::string name;
  Address start = 0;
  std::uint64_t size = 0;
};

struct RevenGenInfo {
  std::uint64_t events = 0;             // events written
  std::vector<MemoryRegion> regions;    // declared physical regions
  std::vector<RevenGenRange> ranges;    // virtual ranges
  std::vector<RevenGenPage> pages;      // every mapped page, by virtual address
  Address cr3 = 0;                      // 0 without paging
  std::vector<Address> code_addresses;  // every pc of the program loop (sorted)
  Address far_pc = 0;                   // pc of exactly one event...
  std::uint64_t far_pc_event = 0;       // ...this one (0 if the trace is too short)
  Address once_address = 0;             // virtual address written exactly once...
  Address once_physical = 0;
  std::uint64_t once_size = 0;
  std::uint64_t once_event = 0;  // ...by this event (0 if too short)
  Address outside_address = 0;   // physical, outside the regions, written at times
  std::uint64_t other_events = 0;
  std::uint64_t continuation_events = 0;    // events with >= 15 entries of one kind
  std::vector<std::uint64_t> cache_points;  // context ids in the trace.cache

  // Virtual -> physical through `pages` (identity without paging); nullopt
  // when unmapped.
  std::optional<Address> Translate(Address virtual_address) const;
};

// Writes a trace to `path` (and `path`.cache when cache_every != 0).
Expected<RevenGenInfo> GenerateRevenTrace(const std::string& path, const RevenGenOptions& opts);

// The same trace, in memory (no cache). For small fixtures.
Expected<RevenGenInfo> GenerateRevenTraceBytes(const RevenGenOptions& opts,
                                               std::vector<std::uint8_t>* out);

}  // namespace backstep::core::testing
