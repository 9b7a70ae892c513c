// The process's memory mappings at any position: what /proc/PID/maps showed
// when the trace was at that point.
//
// Sources: the trace header's regions (the initial image: usercorn's
// keyframe MEM_MAPs carry permissions, file names and offsets; other formats
// give bare ranges) and the mapping changes events describe. Events carry
// them as text (Event::description): the usercorn decoder names every
// MEM_MAP, MEM_UNMAP and MEM_PROT of an event as
//   "map 0x7ffff7fc3000+0x2000 r-- /lib/ld.so /lib/ld.so@0x0"
//   "map 0x7ffff7d00000+0x21000 rw- [heap]"          (anonymous; no file)
//   "unmap 0x7ffff7d00000+0x1000"
//   "protect 0x7ffff7d00000+0x1000 ---"
// joined with "; " (and after a "syscall ..." part); a map the reader did not
// zero-fill ends with " (not zero-filled)". ParseMappingChanges reads that
// text back; a change applies from the position after its event.
//
// Unfilled mappings: UCIR says a new mapping is zero-filled, but the usercorn
// reader leaves out the fill of a mapping over 1 MiB (every 8 MiB thread
// stack): a fill is written data, and the index would copy it
// (docs/formats/usercorn.md, "MEM_MAP"). The rule that replaces it is applied
// when memory is read, by every cursor (replay/replay_cursor_memory.cc):
// a byte of an unfilled mapping that is unknown reads as a known zero
// (FillUnfilledMappings). So every front end (the gdb stub, dump, the Python
// module, origin) sees the same bytes, and nothing is stored for it.
//
// Unmapped memory: a byte that an unmap event removed, and that no mapping
// made since covers, is not part of the process at that position: every
// cursor reads it as unknown (MaskUnmapped), whatever the index last saw
// written there, so gdb says "Cannot access memory" as the live process
// would. A range mapped again reads what the new mapping holds: its fill
// and the writes made since (the reader zero-fills mappings up to 1 MiB; a
// larger one is unfilled, above: its bytes that no event wrote since it was
// made read as zero, also where the index holds older bytes).
//
// One timeline per opened trace (Trace::mappings()), shared by its cursors
// and the front ends. The changes come from the events the index lists
// (Trace::noted_events(): every event whose description DescribesNotes,
// the mapping changes among them), read from the mapped index without
// decoding the trace; only an index without that list makes the timeline
// decode the events, once, as far as the positions asked for.
//
// Thread-safety: MappingTimeline's methods may be called from several
// threads (a mutex serializes them); ParseMappingChanges, FillUnfilledMappings
// and MaskUnmapped are pure functions.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "backstep/core/expected.h"
#include "backstep/core/trace.h"
#include "backstep/core/trace_reader.h"
#include "backstep/core/types.h"

namespace backstep::core {

// One line of /proc/PID/maps.
struct Mapping {
  Address start = 0;
  std::uint64_t size = 0;
  std::string permissions;  // "r-x"; "" when the format does not say
  std::uint64_t file_offset = 0;
  std::string name;  // a path, "[heap]", "[stack]", or ""
  // Mapped during the run without its zero fill in the trace (" (not
  // zero-filled)"): its bytes that no event wrote since are zero.
  bool unfilled = false;
  Address end() const { return start + size; }
  bool operator==(const Mapping&) const = default;
};

struct MappingChange {
  enum class Kind : unsigned char { kMap, kUnmap, kProtect };
  Kind kind = Kind::kMap;
  Address start = 0;
  std::uint64_t size = 0;
  std::string permissions;        // kMap, kProtect
  std::string name;               // kMap: the file, else the description
  std::uint64_t file_offset = 0;  // kMap of a file
  bool unfilled = false;          // kMap " (not zero-filled)"
  bool operator==(const MappingChange&) const = default;
};

// The mapping changes an event description names, in order; parts that are
// not mapping changes (or do not parse) are skipped.
std::vector<MappingChange> ParseMappingChanges(std::string_view description);

// Applies `change` to `maps` (by start, non-overlapping): a map replaces
// whatever it overlaps, an unmap removes the range, a protect changes the
// permissions of the mapped bytes in the range.
void ApplyMappingChange(std::map<Address, Mapping>& maps, const MappingChange& change);

// The mappings of `maps` in order, adjacent anonymous pieces with the same
// name, permissions and fill joined as the kernel shows them (a heap grown by brk
// is one [heap]); pieces of file mappings stay apart, as the kernel keeps
// them once re-protected.
std::vector<Mapping> JoinedMappings(const std::map<Address, Mapping>& maps);

// For each byte of [addr, addr + out.size()) with known[i] == 0 that lies in
// an unfilled mapping of `maps` (sorted, as MappingTimeline::At gives them):
// out[i] = 0 and known[i] = 1. The range may end at 2^64.
// REQUIRES: out.size() == known.size().
void FillUnfilledMappings(std::span<const Mapping> maps, Address addr, std::span<std::uint8_t> out,
                          std::span<std::uint8_t> known);

// For each byte of [addr, addr + out.size()) inside a range of `unmapped`
// (sorted, non-overlapping, as MappingState::unmapped): out[i] = 0 and
// known[i] = 0. Cost: one binary search when the read touches no such
// range. The range may end at 2^64. REQUIRES: out.size() == known.size().
void MaskUnmapped(std::span<const Mapping> unmapped, Address addr, std::span<std::uint8_t> out,
                  std::span<std::uint8_t> known);

// The mappings at a position, as one MappingTimeline::StateAt answer.
// Immutable; positions between the same two changes share one.
struct MappingState {
  std::vector<Mapping> maps;      // sorted and joined (MappingTimeline::At)
  std::vector<Mapping> unmapped;  // removed by an unmap, not mapped since
  // Unfilled mappings made over memory that was mapped before: the index
  // still holds the old bytes, so a byte no event >= `map_event` (the event
  // that made the mapping) wrote reads as zero. Sorted by start.
  struct Refill {
    Address start = 0;
    std::uint64_t size = 0;
    std::uint64_t map_event = 0;
    bool operator==(const Refill&) const = default;
  };
  std::vector<Refill> refilled;
};

class MappingTimeline {
 public:
  // Where the changes come from: kIndex, the index's list of noted events
  // when it has one (else the events, decoded); kScan, the events, decoded
  // even when the index lists them (tests compare both). The answers are
  // the same.
  enum class Source { kIndex, kScan };
  explicit MappingTimeline(std::shared_ptr<const Trace> trace, Source source = Source::kIndex);
  // Without ownership: `trace` must outlive the timeline (a cursor's).
  explicit MappingTimeline(const Trace& trace, Source source = Source::kIndex);

  // The mappings at `position` (clamped to the end), sorted and joined.
  // From the index's list: the first call reads every listed event's
  // description from the mapped index (no decoding), later calls nothing.
  // Decoding (kScan, or no list): the first call at a position p reads
  // events [scanned, p) once; later calls at or before a scanned position
  // read nothing. Errors: the reader's (opening it, a corrupt event),
  // naming file and offset; none from the list.
  Expected<std::vector<Mapping>> At(Position position) const;
  // The same with the unmapped ranges, shared: a call at a position between
  // the same two changes as an earlier one returns the same state (a binary
  // search once the events are read). Errors: At's.
  Expected<std::shared_ptr<const MappingState>> StateAt(Position position) const;

  // Whether any event seen so far changed a mapping (formats without
  // mapping events serve the initial ranges at every position). From the
  // index's list, once a state was asked for: any event of the trace.
  bool saw_changes() const;

 private:
  Status ScanTo(Position position) const;
  std::shared_ptr<const MappingState> Build(std::size_t applied) const;

  std::shared_ptr<const Trace> owner_;  // null when constructed from a reference
  const Trace* trace_;
  Source source_;
  mutable std::mutex mutex_;  // guards everything below
  mutable std::unique_ptr<TraceReader> reader_;
  mutable Position scanned_{0};  // changes of events before this are in changes_
  std::map<Address, Mapping> initial_;
  mutable std::vector<std::pair<Position, MappingChange>> changes_;  // applies from .first
  mutable Event event_;
  // The states last built (up to 64, oldest dropped first), by the number
  // of changes applied: jumps back and forth rebuild none.
  mutable std::vector<std::pair<std::size_t, std::shared_ptr<const MappingState>>> states_;
  // The pieces after the first built_applied_ changes, by start: a later
  // state applies only the changes after them.
  mutable std::size_t built_applied_ = 0;
  mutable std::map<Address, Mapping> built_maps_, built_unmapped_;
  // By change: an unfilled map over memory mapped before it (Refill).
  mutable std::vector<bool> reused_;
};

}  // namespace backstep::core
