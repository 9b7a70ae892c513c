// RevenReader: the TraceReader for REVEN rvnbintrace v1 traces (trace.bin).
//
// Open() parses the metadata and the four leading sections (header, machine
// description, initial memory, initial registers) and validates them; the
// events are decoded lazily by Next(). Initial memory is never copied: it is
// read from the mapped file on demand, and memory writes of events are spans
// into it. A `<trace>.cache` beside the trace (looked up by the source's
// name) provides ResumePoints(); a cache that fails validation is ignored
// and named in the header's properties, never an error.
//
// Header: format "reven", X86_64(), physical addresses, one thread
// (ThreadId(1)), no recorded reads, declared_events = event_count when it is
// not 0. Properties: tool and format versions, static registers
// ("cpuid_max_phy_addr" -> "0x28"), "unmapped registers" (names backstep
// ignores), "cache" (what became of trace.cache).
//
// Event count: a producer patches event_count (and the events section's
// size) when it finishes. When event_count is 0 the reader scans to the end
// of the section (to the end of the file when the size is 0 too) and a last
// event cut by that end ends the trace cleanly. With a count, the reader
// stops after that many events and a cut event is Corruption.
//
// ReaderPosition: offset = file offset of the next event, aux = its number.
//
// Layout and quirks: docs/formats/reven.md. Thread-safety: as
// TraceReader (one thread at a time; the source may be shared).
#pragma once

#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "backstep/core/trace_reader.h"
#include "formats/reven/reven_cache.h"
#include "formats/reven/reven_container.h"
#include "formats/reven/reven_events.h"
#include "formats/reven/reven_machine.h"

namespace backstep::core {

class RevenReader final : public TraceReader {
 public:
  // Registry entry (formats/format_entry.h).
  static constexpr std::string_view kFormatName = "reven";
  static constexpr std::string_view kFormatDescription = "REVEN rvnbintrace v1 (trace.bin)";
  static bool Sniff(std::span<const std::uint8_t> head);
  // Opens the trace in `source`. Corruption or Unsupported (arm64,
  // compression, newer metadata, operations backstep cannot convert), each
  // naming the file, the section and the offset.
  static Expected<std::unique_ptr<RevenReader>> Open(std::shared_ptr<const ByteSource> source);

  const TraceHeader& header() const override { return header_; }
  const ByteSource& source() const override { return *source_; }
  std::vector<std::pair<ThreadId, RegisterFile>> InitialRegisters() const override;
  void ReadInitialMemory(Address address, std::span<std::uint8_t> out,
                         std::span<std::uint8_t> known) const override;
  ReaderPosition Tell() const override { return {offset_, next_event_}; }
  // InvalidArgument when `pos` lies outside the events section.
  Status Seek(const ReaderPosition& pos) override;
  Expected<bool> Next(Event* event) override;
  // From trace.cache, in increasing position order; empty without a valid
  // cache. Cost: builds one RegisterFile per point.
  std::vector<ResumePoint> ResumePoints() const override;

  // The format's own view, for tools and tests.
  const RevenMetadata& metadata() const { return metadata_; }
  const RevenMachine& machine() const { return machine_; }
  // File offset of the events payload (its u64 event_count).
  std::uint64_t events_payload_offset() const { return events_payload_; }
  // The event_count field (0: unknown, the reader scans).
  std::uint64_t event_count_field() const { return event_count_; }

 private:
  struct Region {
    std::uint64_t start, size, file_offset;
  };

  explicit RevenReader(std::shared_ptr<const ByteSource> source);
  Status ParseSections();
  Status ParseInitialMemory(ByteReader section);
  Status ParseEventsHeader(ByteReader& file);
  void FillProperties(const std::vector<std::string>& unmapped);
  void LoadCache();
  // A register file from canonical writes (fstat made known first if needed).
  RegisterFile FileFromWrites(const std::vector<RegisterWrite>& writes) const;

  std::shared_ptr<const ByteSource> source_;
  std::span<const std::uint8_t> data_;
  TraceHeader header_;
  RevenMetadata metadata_;
  RevenMachine machine_;
  std::unique_ptr<RevenEventDecoder> decoder_;
  std::vector<Region> regions_;                // sorted by start, non-empty
  std::vector<RegisterWrite> initial_writes_;  // canonical initial registers
  std::uint64_t events_payload_ = 0;           // offset of event_count
  std::uint64_t first_event_ = 0;              // offset of event 0
  std::uint64_t section_end_ = 0;              // end of the events section
  std::uint64_t event_count_ = 0;              // 0: scan to section_end_
  std::uint64_t offset_ = 0;                   // next event
  std::uint64_t next_event_ = 0;               // its number
  std::unique_ptr<RevenCache> cache_;          // a validated trace.cache, or null
};

}  // namespace backstep::core
