// Configurations for the cross-checks of the index, cursor and search
// against the naive oracle: random FakeTraces of every shape, each opened
// with default and with tiny index tuning (keyframes every few dozen events,
// blocks of a few entries, snapshots every few blocks, a memory budget that
// forces many segments) so that every path of the index is exercised.
//
// Thread-safety: plain data.
#pragma once

#include <string>
#include <vector>

#include "backstep/core/trace.h"
#include "backstep/testing/fake_trace_generator.h"

namespace backstep::core::testing {

struct CrossCheckConfig {
  std::string name;
  FakeTraceOptions trace;
  OpenOptions open;
};

inline std::vector<CrossCheckConfig> CrossCheckConfigs() {
  OpenOptions tiny;
  tiny.keyframe_interval = 37;
  tiny.index_block_entries = 3;
  tiny.index_snapshot_blocks = 2;
  tiny.index_memory_budget = 6000;
  OpenOptions defaults;
  std::vector<CrossCheckConfig> out;
  auto add = [&](std::string name, int threads, AddressKind kind, bool reads, bool clears,
                 bool full, std::uint64_t seed) {
    FakeTraceOptions t;
    t.seed = seed;
    t.events = 1500;
    t.threads = threads;
    t.address_kind = kind;
    t.records_reads = reads;
    t.clears = clears;
    t.full_image = full;
    t.full_registers = full;
    t.reader_copies_data = !full;  // partial traces also exercise copied data
    out.push_back({name + "_tiny", t, tiny});
    out.push_back({name + "_default", t, defaults});
  };
  add("single_virtual", 1, AddressKind::kVirtual, false, false, true, 11);
  add("single_virtual_reads", 1, AddressKind::kVirtual, true, false, false, 12);
  add("threads_virtual_reads_clears", 3, AddressKind::kVirtual, true, true, false, 13);
  add("threads_virtual_partial", 4, AddressKind::kVirtual, false, false, false, 14);
  add("physical_reads", 1, AddressKind::kPhysical, true, false, true, 15);
  add("physical_threads_partial", 2, AddressKind::kPhysical, true, false, false, 16);
  return out;
}

}  // namespace backstep::core::testing
