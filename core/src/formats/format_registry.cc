#include "backstep/core/format_registry.h"

#include "formats/format_entries.h"
#include "util/hex.h"

namespace backstep::core {

std::span<const FormatInfo> Formats() {
  static const std::vector<FormatInfo> kFormats = {RevenFormatInfo(), TfileFormatInfo(),
                                                   UsercornFormatInfo(), BapFormatInfo()};
  return kFormats;
}

const FormatInfo* FindFormat(std::string_view name) {
  for (const FormatInfo& f : Formats()) {
    if (f.name == name) return &f;
  }
  return nullptr;
}

Expected<std::unique_ptr<TraceReader>> OpenTraceSource(std::shared_ptr<const ByteSource> source) {
  auto head = source->data().first(std::min<std::size_t>(source->size(), 64));
  for (const FormatInfo& f : Formats()) {
    if (f.sniff(head)) return f.open(source);
  }
  std::string names;
  for (const FormatInfo& f : Formats()) names += (names.empty() ? "" : ", ") + std::string(f.name);
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
