// FormatRegistry: finds the reader (and writer) for a trace file.
//
// Each format registers a sniffer (magic bytes; the extension is only a
// hint), a reader factory and, when it has one, a writer factory. Opening a
// file tries every sniffer; a file nobody recognizes gets a clear error
// naming the file and its first bytes.
//
// Thread-safety: the registry is built once at start-up and read-only after.
#pragma once

#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "backstep/core/byte_source.h"
#include "backstep/core/trace_reader.h"
#include "backstep/core/trace_writer.h"

namespace backstep::core {

struct FormatInfo {
  std::string_view name;         // "reven"
  std::string_view description;  // "REVEN rvnbintrace v1 (trace.bin)"
  // True if the leading bytes belong to this format.
  std::function<bool(std::span<const std::uint8_t> head)> sniff;
  std::function<Expected<std::unique_ptr<TraceReader>>(std::shared_ptr<const ByteSource>)> open;
  // May be empty (no writer).
  std::function<Expected<std::unique_ptr<TraceWriter>>(const std::string& path)> create_writer;
};

// Every built-in format.
std::span<const FormatInfo> Formats();
const FormatInfo* FindFormat(std::string_view name);
// "reven, tfile, usercorn, x64dbg, bap": the names of the formats with a
// writer (`writable`) or of all of them, in registry order.
std::string FormatNames(bool writable);
// A streaming writer of format `name` to `path` (TraceWriter protocol):
// InvalidArgument naming the known formats when `name` is none of them,
// Unsupported when the format has no writer.
Expected<std::unique_ptr<TraceWriter>> CreateTraceWriter(std::string_view name,
                                                         const std::string& path);

// Maps `path` and opens it with the format whose sniffer accepts it.
Expected<std::unique_ptr<TraceReader>> OpenTraceFile(const std::string& path);
// Same, for an already mapped source.
Expected<std::unique_ptr<TraceReader>> OpenTraceSource(std::shared_ptr<const ByteSource> source);

}  // namespace backstep::core
