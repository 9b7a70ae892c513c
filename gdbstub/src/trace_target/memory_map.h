// ProcessMemoryMap: the MemoryMap capability of a TraceTarget
// (qMemoryRegionInfo: LLDB's `memory region` and its unwinder), and the
// mappings `monitor info mem` lists: the recorded process's mappings at the
// viewed position (ServedPosition::view(), so a selected trace frame's),
// from core::MappingTimeline. Permissions a format does not record read rwx.
// The process's files (vFile) are ProcessFiles'.
//
// Thread-safety: one thread at a time (the owning TraceTarget's).
#pragma once

#include <vector>

#include "backstep/core/expected.h"
#include "backstep/core/mappings.h"
#include "backstep/gdbstub/capabilities.h"
#include "trace_target/served_position.h"

namespace backstep::gdbstub {

class ProcessMemoryMap final : public MemoryMap {
 public:
  // Both must outlive the object.
  ProcessMemoryMap(const core::MappingTimeline& mappings, ServedPosition& served)
      : mappings_(mappings), served_(served) {}

  // The mapping containing `addr`, or the unmapped gap around it (also when
  // the mappings cannot be read).
  MemoryRegion RegionAt(core::Address addr) override;
  // Every mapping at the viewed position, by address.
  core::Expected<std::vector<core::Mapping>> MappingsHere() {
    return mappings_.At(served_.view().position());
  }

 private:
  const core::MappingTimeline& mappings_;
  ServedPosition& served_;
};

}  // namespace backstep::gdbstub
