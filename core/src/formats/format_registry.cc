#include "backstep/core/format_registry.h"

#include "formats/bap/bap_reader.h"
#include "formats/bap/bap_trace_writer.h"
#include "formats/format_entry.h"
#include "formats/reven/reven_reader.h"
#include "formats/reven/reven_trace_writer.h"
#include "formats/tfile/tfile_reader.h"
#include "formats/tfile/tfile_trace_writer.h"
#include "formats/usercorn/usercorn_reader.h"
#include "formats/usercorn/usercorn_trace_writer.h"
#include "formats/x64dbg/x64dbg_reader.h"
#include "formats/x64dbg/x64dbg_trace_writer.h"
#include "util/hex.h"

namespace backstep::core {

std::span<const FormatInfo> Formats() {
  // One line per format (formats/format_entry.h); sniffers are tried in
  // this order.
  static const std::vector<FormatInfo> kFormats = {
      FormatEntry<RevenReader, RevenTraceWriter>(),
      FormatEntry<TfileReader, TfileTraceWriter>(),
      FormatEntry<UsercornReader, UsercornTraceWriter>(),
      FormatEntry<X64dbgReader, X64dbgTraceWriter>(),
      FormatEntry<BapReader, BapTraceWriter>(),
  };
  return kFormats;
}

const FormatInfo* FindFormat(std::string_view name) {
  for (const FormatInfo& f : Formats()) {
    if (f.name == name) return &f;
  }
  return nullptr;
}

std::string FormatNames(bool writable) {
  std::string names;
  for (const FormatInfo& f : Formats()) {
    if (writable && !f.create_writer) continue;
    names += (names.empty() ? "" : ", ") + std::string(f.name);
  }
  return names;
}

Expected<std::unique_ptr<TraceWriter>> CreateTraceWriter(std::string_view name,
                                                         const std::string& path) {
  const FormatInfo* format = FindFormat(name);
  if (format == nullptr) {
    return Status::InvalidArgument("unknown format '" + std::string(name) +
                                   "' (writable: " + FormatNames(true) + ")");
  }
  if (!format->create_writer) {
    return Status::Unsupported("format '" + std::string(name) + "' has no writer");
  }
  return format->create_writer(path);
}

Expected<std::unique_ptr<TraceReader>> OpenTraceSource(std::shared_ptr<const ByteSource> source) {
  auto head = source->data().first(std::min<std::size_t>(source->size(), 64));
  for (const FormatInfo& f : Formats()) {
    if (f.sniff(head)) return f.open(source);
  }
  const std::string names = FormatNames(false);
  if (source->size() == 0) {
    return Status::Unsupported(source->name() +
                               ": empty file, not a trace (known formats: " + names + ")");
  }
  return Status::Unsupported(source->name() + ": unknown trace format (first bytes " +
                             HexBytes(head.first(std::min<std::size_t>(head.size(), 8)), ' ') +
                             "; known formats: " + names + ")");
}

Expected<std::unique_ptr<TraceReader>> OpenTraceFile(const std::string& path) {
  BACKSTEP_ASSIGN_OR_RETURN(auto source, MapFile(path));
  return OpenTraceSource(std::move(source));
}

}  // namespace backstep::core
