// ProcessMemoryMap (memory_map.h): qMemoryRegionInfo from the mappings.
#include "trace_target/memory_map.h"

#include <algorithm>
#include <iterator>

namespace backstep::gdbstub {

MemoryRegion ProcessMemoryMap::RegionAt(core::Address addr) {
  auto maps = MappingsHere();
  MemoryRegion gap;  // from the end of the mapping before addr to the next one
  if (!maps.ok()) return gap;
  auto next = std::upper_bound(maps->begin(), maps->end(), addr,
                               [](core::Address a, const core::Mapping& m) { return a < m.start; });
  if (next != maps->begin()) {
    const core::Mapping& m = *std::prev(next);
    if (addr - m.start < m.size) {
      MemoryRegion region{m.start, m.size, true, true, true, true, m.name};
      if (m.permissions.size() == 3) {
        region.readable = m.permissions[0] == 'r';
        region.writable = m.permissions[1] == 'w';
        region.executable = m.permissions[2] == 'x';
      }
      return region;
    }
    gap.start = m.end();
  }
  // size 0: up to the end of the address space.
  gap.size = next == maps->end() ? 0 : next->start - gap.start;
  return gap;
}

}  // namespace backstep::gdbstub
