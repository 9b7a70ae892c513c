// Write capture: how every engine turns what an instruction, a system call
// or a signal's delivery wrote into the sink's writes, and keeps its
// AddressSpace (address_space.h) in step with a system call's mapping
// changes.
//
// WriteBuffer collects (address, bytes) pieces for one event and hands them
// to the sink as core::MemoryAccess spans over its own storage (valid until
// the next Clear() or Add()). With `merge_contiguous`, a piece that starts
// where the previous one ended extends it (the emu engine's write hook
// reports a store piece by piece); without it every piece stays its own
// write (the ptrace engine's ranges).
//
// CaptureWrites() reads ranges from the tracee into a buffer, keeping only
// the bytes that changed for a `maybe` range; UpdateMappings() applies a
// system call's mapping changes; AddNewMappingContents() adds the non-zero
// runs of the new mappings, which the trace needs as writes.
//
// Thread-safety: one thread at a time.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <utility>
#include <vector>

#include "backstep/core/event.h"
#include "backstep/core/expected.h"
#include "recorder/address_space.h"
#include "recorder/insn_decoder.h"
#include "recorder/tracee.h"

namespace backstep::record {

class WriteBuffer {
 public:
  explicit WriteBuffer(bool merge_contiguous) : merge_contiguous_(merge_contiguous) {}

  void Clear() {
    data_.clear();
    spans_.clear();
  }
  bool empty() const { return spans_.empty(); }
  void Add(core::Address address, std::span<const std::uint8_t> bytes);
  // The writes added since Clear(), in order.
  std::span<const core::MemoryAccess> Build();

 private:
  bool merge_contiguous_;
  std::vector<std::uint8_t> data_;
  std::vector<std::pair<core::Address, std::size_t>> spans_;  // (address, size) into data_
  std::vector<core::MemoryAccess> writes_;
};

// Reads `ranges` from the tracee into *out and the shadow of *space; of a
// `maybe` range, only the runs that differ from the shadow.
void CaptureWrites(const Tracee& tracee, std::span<const Range> ranges, AddressSpace* space,
                   WriteBuffer* out);

// After system call `nr` (`args`, returning `result`, which did not fail)
// that may change the mappings (ChangesMappings(nr)): re-reads them into
// *space, the changes into *maps (mmap's and mremap's result counts as new
// even where the mapping looks the same).
core::Status UpdateMappings(const Tracee& tracee, std::uint64_t nr, const std::uint64_t args[6],
                            std::uint64_t result, AddressSpace* space, MapChanges* maps);

// The ranges system call `nr` (`args`, returning `result`) wrote, appended
// to *ranges: its known output buffers (syscall_effects.h), else (*ranges
// cleared first) every writable byte that differs from the shadow of
// *space. Returns whether it had to diff (RecordResult::full_diffs).
bool SyscallWrites(const Tracee& tracee, std::uint64_t nr, const std::uint64_t args[6],
                   std::uint64_t result, AddressSpace* space, std::vector<Range>* ranges);

// The contents of maps.contents as writes: only their non-zero runs (a
// fresh mapping reads as zeros).
void AddNewMappingContents(const Tracee& tracee, const MapChanges& maps, WriteBuffer* out);

}  // namespace backstep::record
