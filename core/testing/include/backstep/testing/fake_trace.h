// FakeTrace: an in-memory trace for the tests of the index, replay and search.
//
// A FakeTrace is a plain description of a trace: header flags, initial
// registers per thread, an initial memory image with a known mask, and events
// that own their data. SerializeFakeTrace() turns it into a small private byte
// format ("BSFAKE01", below) that the FakeTraceReader decodes lazily, like a
// real format reader: event spans point into the ByteSource, and a
// ReaderPosition is (byte offset, event number), so the index resumes it from
// keyframes and may reference written bytes by source offset. Tests keep the
// bytes in memory (MemorySource) or write them to a file (index reuse,
// staleness, read-only directories).
//
// Byte layout (little-endian; test-only, no compatibility promise):
//   "BSFAKE01" u8 address_kind u8 records_reads u8 reader_copies_data
//   u32 threads  { u64 tid, u32 n, n storage bytes, u32 w, w x u64 known }
//   u32 regions  { u64 start, u64 size, size bytes, size known bytes (0/1) }
//   u64 events   { u64 tid, u8 kind, u32 flags, u16 n, n description bytes,
//                  u16 regs { u16 id, u8 op, u8 size, size bytes },
//                  u16 writes { u64 address, u32 n, n bytes }, u16 reads {...} }
//
// Thread-safety: FakeTrace is a value; a reader is used by one thread at a time.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "backstep/core/byte_source.h"
#include "backstep/core/event.h"
#include "backstep/core/register_file.h"
#include "backstep/core/trace.h"
#include "backstep/core/trace_reader.h"

namespace backstep::core::testing {

struct FakeAccess {
  Address address = 0;
  std::vector<std::uint8_t> data;
};

struct FakeEvent {
  ThreadId thread;
  EventKind kind = EventKind::kInstruction;
  std::uint32_t flags = 0;
  std::string description;
  std::vector<RegisterWrite> registers;
  std::vector<FakeAccess> writes;  // in order of application
  std::vector<FakeAccess> reads;   // values seen in the state before the event
};

// A contiguous range of the initial image; known[i] is 0 or 1.
struct FakeImageRegion {
  Address start = 0;
  std::vector<std::uint8_t> bytes;
  std::vector<std::uint8_t> known;
};

// Architecture: always X86_64().
struct FakeTrace {
  AddressKind address_kind = AddressKind::kVirtual;
  bool records_reads = false;
  // The reader hands out copies of accessed bytes instead of views of the
  // file (as formats that decompress do), so the index cannot reference them.
  bool reader_copies_data = false;
  std::vector<std::pair<ThreadId, RegisterFile>> initial_registers;
  std::vector<FakeImageRegion> image;  // non-overlapping
  std::vector<FakeEvent> events;
};

inline constexpr char kFakeFormatName[] = "fake";

std::vector<std::uint8_t> SerializeFakeTrace(const FakeTrace& trace);

// Decodes the header, threads and image of a serialized trace (events are
// decoded lazily by Next()). Corruption for malformed bytes.
Expected<std::unique_ptr<TraceReader>> OpenFakeTrace(std::shared_ptr<const ByteSource> source);

// The serialized trace in a MemorySource named `name`.
std::shared_ptr<const ByteSource> FakeTraceSource(const FakeTrace& trace,
                                                  std::string name = "<fake>");

// Writes the serialized trace to `path` (IOError on failure).
Status WriteFakeTraceFile(const FakeTrace& trace, const std::string& path);

// Reads a whole trace of any format (initial registers, the image of the
// header's regions, every event from the reader's position) into a
// FakeTrace, so that the oracle can replay it. Errors: the reader's.
Expected<FakeTrace> CaptureTrace(TraceReader& reader);

// Opens `trace` as a Trace whose index is built in memory.
Expected<std::shared_ptr<Trace>> OpenFakeInMemory(const FakeTrace& trace,
                                                  const OpenOptions& options = {});
// Opens a file written by WriteFakeTraceFile(); the index goes next to it
// (or to the cache directory), as for real traces.
Expected<std::shared_ptr<Trace>> OpenFakeFile(const std::string& path,
                                              const OpenOptions& options = {});

}  // namespace backstep::core::testing
