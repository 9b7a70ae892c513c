// AddressSpace: the recorder's view of the tracee's mappings, with a shadow
// copy of every writable one.
//
// The shadow is what the trace says memory holds: the initial image plus
// every write the recorder has emitted. Diff() compares writable memory with
// it (the safety net when a system call's or an instruction's writes are not
// known precisely) and returns the bytes that changed; Note() keeps the
// shadow current with writes found by other means.
//
// Update() re-reads /proc/PID/maps after a system call that may change the
// mappings and splits the change into unmapped ranges, new ranges (with
// their contents) and ranges whose protection changed. `fresh` forces a
// range to count as new even when /proc/PID/maps shows the same mapping
// there (mmap MAP_FIXED over a mapping, mremap's destination).
//
// Thread-safety: one thread at a time.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <utility>
#include <vector>

#include "backstep/core/event.h"
#include "recorder/insn_decoder.h"
#include "recorder/recording_sink.h"
#include "recorder/tracee.h"

namespace backstep::record {

struct MapChanges {
  std::vector<Mapping> unmapped, mapped, reprotected;
  std::vector<Range> contents;  // ranges of `mapped` to emit as writes
};

class AddressSpace {
 public:
  // Reads the maps and the writable mappings' contents.
  core::Status Init(const Tracee& tracee);
  const std::vector<Mapping>& mappings() const { return maps_; }
  // The mapping holding `address`, or nullptr.
  const Mapping* Find(core::Address address) const;

  // Records bytes the trace now says [address, +data) holds.
  void Note(core::Address address, std::span<const std::uint8_t> data);
  // Appends to *changed the runs of [address, +data) that differ from the
  // shadow (bytes outside writable mappings cannot have been written).
  void Changed(core::Address address, std::span<const std::uint8_t> data,
               std::vector<Range>* changed) const;
  // Appends to *ranges the writable bytes that differ from the shadow (and
  // updates the shadow). Cost: a read of all writable memory.
  void Diff(const Tracee& tracee, std::vector<Range>* ranges);
  core::Status Update(const Tracee& tracee, std::span<const Range> fresh, MapChanges* changes);
  // What the trace says [address, +out) holds: the shadow for writable
  // bytes, the tracee's memory for the others (zeros where unreadable).
  void ReadTraced(const Tracee& tracee, core::Address address, std::span<std::uint8_t> out) const;
  // Bytes of writable memory the shadow holds.
  std::uint64_t shadow_bytes() const;
  // From the next Init() on, the mappings meeting [start, start + size) are
  // not the program's (the native engine's system call buffer): neither
  // shadowed nor diffed, by Init() nor by Update() (a mapping of the
  // program merged with one of them included).
  void Skip(core::Address start, std::uint64_t size) { skipped_.push_back({start, size, false}); }
  // Set: applied to every read of the tracee's maps (Init, Update) before
  // anything uses them (the native engine's materialization names there
  // the anonymous memory that stands for a file mapping: mapping_names.h).
  void SetRename(std::function<void(std::vector<Mapping>*)> rename) { rename_ = std::move(rename); }

 private:
  // Neither shadowed nor diffed: vvar and vsyscall, and what Skip() named.
  bool Unshadowed(const Mapping& m) const;
  void Shadow(const Tracee& tracee, const Mapping& m);

  std::vector<Mapping> maps_;
  std::map<core::Address, std::vector<std::uint8_t>> shadow_;  // by start; writable maps
  std::vector<std::uint8_t> scratch_;
  std::vector<Range> skipped_;
  std::function<void(std::vector<Mapping>*)> rename_;
};

}  // namespace backstep::record
