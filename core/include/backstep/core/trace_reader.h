// TraceReader: streams the events of one trace file, in order.
//
// One implementation per format (core/src/formats/<fmt>/). A reader is made
// by the FormatRegistry (format_registry.h) from a ByteSource. It exposes the
// trace's header, the initial state (registers per thread at position 0 and
// random access to the initial memory image), and a pull-style Next() that
// yields events, end of trace, or a Corruption status naming the file,
// section and offset.
//
// Readers are resumable: Tell() returns an opaque ReaderPosition for the
// next event, and Seek() continues decoding from one. Readers keep no state
// that depends on register values (register operations are carried in
// RegisterWrite::op and applied by the consumer), so a ReaderPosition alone
// resumes decoding. This is what lets the index jump into the middle of a
// file from a keyframe.
//
// Thread-safety: a reader is used by one thread at a time. Several readers
// may share one ByteSource.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "backstep/core/arch.h"
#include "backstep/core/byte_source.h"
#include "backstep/core/event.h"
#include "backstep/core/expected.h"
#include "backstep/core/register_file.h"
#include "backstep/core/types.h"

namespace backstep::core {

struct MemoryRegion {
  Address start = 0;
  std::uint64_t size = 0;
  std::string name;  // mapping name, or "" (REVEN regions have none)
  // What formats with mapping records know (usercorn MEM_MAP): "r-x"-style
  // protection, "" when unknown; the file offset of `start` for file maps.
  std::string permissions;
  std::uint64_t file_offset = 0;
};

// What a trace recorded by gdb tracepoints (a tfile) defines, in gdb's
// upload syntax: the remote protocol's qTfP/qTsP, qTfV/qTsV and qTStatus
// replies and a tfile's `tp`, `tsv` and `status` lines are the same text
// (gdb parses both with parse_tracepoint_definition, parse_tsv_definition and
// parse_trace_status), so a server hands gdb the same tracepoints, trace
// state variables and status as `target tfile` shows.
struct TracepointDefinitions {
  std::vector<std::string> tracepoints;  // "T2:401132:E:4:0", "A2:401132:R0fff", "Z2:...", ...
  std::vector<std::string> variables;    // "2:0:0:68697473" ($hits, initial 0)
  std::string status;                    // "0;tstop:0;tframes:f;..." ("" if the file has none)
};

struct TraceHeader {
  std::string format;  // registry name: "reven", "usercorn", "tfile", ...
  const ArchDescription* arch = nullptr;
  AddressKind address_kind = AddressKind::kVirtual;
  // Event count declared by the file, when it declares one (may be wrong for
  // truncated files; the index counts what is really there).
  std::optional<std::uint64_t> declared_events;
  bool records_reads = false;  // events carry observed reads
  // false: the reads' data are placeholders (usercorn MEM_READ holds no
  // value); a read's value is the memory at its position, which queries
  // compute, and no value is inferred from it.
  bool read_values = true;
  // Events name the mapping changes they make in their description
  // (backstep/core/mappings.h; usercorn UCIR): memory reads follow the
  // mapping timeline (unmapped bytes unknown, unfilled mappings zero).
  bool describes_mappings = false;
  std::vector<MemoryRegion> regions;  // memory of the initial image
  // Free-form facts for `backstep info`: tool name, version, date, static
  // registers ("cpuid_max_phy_addr" -> "0x28"), ...
  std::vector<std::pair<std::string, std::string>> properties;
  // Set for traces recorded by gdb tracepoints (tfile).
  std::optional<TracepointDefinitions> tracepoints;
};

// Opaque resume point. Only the reader that produced it interprets it.
struct ReaderPosition {
  std::uint64_t offset = 0;
  std::uint64_t aux = 0;
  bool operator==(const ReaderPosition&) const = default;
};

// A point where a reader can resume with registers already known (REVEN's
// trace.cache). The index may use them to build in parallel.
struct ResumePoint {
  Position position;
  ReaderPosition reader_position;
  std::vector<std::pair<ThreadId, RegisterFile>> registers;
};

class TraceReader {
 public:
  virtual ~TraceReader() = default;

  virtual const TraceHeader& header() const = 0;
  // The file being read (for messages and index identity).
  virtual const ByteSource& source() const = 0;

  // Registers of every thread known at position 0.
  virtual std::vector<std::pair<ThreadId, RegisterFile>> InitialRegisters() const = 0;
  // Initial memory image: fills `out` and sets known[i] to 1 for every byte
  // the image holds, 0 elsewhere. REQUIRES: known.size() == out.size().
  // Cost: a copy from the mapped file.
  virtual void ReadInitialMemory(Address address, std::span<std::uint8_t> out,
                                 std::span<std::uint8_t> known) const = 0;

  // Resume point of the next event.
  virtual ReaderPosition Tell() const = 0;
  // Continue decoding at `pos` (from Tell() of a reader of the same file).
  virtual Status Seek(const ReaderPosition& pos) = 0;
  // Decodes the next event into *event (cleared first). Returns true for an
  // event, false at the end of the trace, or a Corruption status naming the
  // file and offset.
  virtual Expected<bool> Next(Event* event) = 0;

  // Resume points with known registers, if the format has them. Default none.
  virtual std::vector<ResumePoint> ResumePoints() const { return {}; }

  // Where event `event` starts (what Tell() returns just before it), for a
  // format that knows every event's place without decoding the ones before
  // it (a tfile's frame table), in O(1) or O(log n); nullopt otherwise
  // (the default) or past the last event. A cursor uses it to start replay
  // at an event that clears its thread's registers (kEventClearsRegisters)
  // instead of at the keyframe before it.
  virtual std::optional<ReaderPosition> EventPosition(std::uint64_t /*event*/) const {
    return std::nullopt;
  }
};

}  // namespace backstep::core
