// TraceTarget's view of the recorded process: its memory map at the
// position (qMemoryRegionInfo, `monitor info mem`). The files (vFile) are
// ProcessFiles'.
#include <algorithm>
#include <cstdio>

#include "trace_target/trace_target.h"

namespace backstep::gdbstub {

MemoryRegion TraceTarget::RegionAt(core::Address addr) {
  auto maps = mappings_->At(view().position());
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

core::Expected<std::string> TraceTarget::MonitorInfoMem() {
  BACKSTEP_ASSIGN_OR_RETURN(std::vector<core::Mapping> maps, mappings_->At(view().position()));
  // QEMU's x86-64 `info mem`: "start-end size flags", flags = user page,
  // readable, writable (QEMU marks every present page readable; a mapping
  // without read permission shows '-'). What GEF parses for vmmap.
  std::string out;
  char line[96];
  for (const core::Mapping& m : maps) {
    const bool known = m.permissions.size() == 3;
    int n = std::snprintf(
        line, sizeof line, "%016llx-%016llx %016llx u%c%c\n",
        static_cast<unsigned long long>(m.start), static_cast<unsigned long long>(m.end()),
        static_cast<unsigned long long>(m.size), !known || m.permissions[0] == 'r' ? 'r' : '-',
        !known || m.permissions[1] == 'w' ? 'w' : '-');
    out.append(line, static_cast<std::size_t>(std::max(n, 0)));
  }
  return out;
}

core::Status TraceTarget::Restart() {
  armed_ = std::monostate{};
  direction_ = core::Direction::kForward;
  BACKSTEP_RETURN_IF_ERROR(SelectFrame(std::nullopt));
  return MoveTo(first_position_, std::nullopt);
}

}  // namespace backstep::gdbstub
