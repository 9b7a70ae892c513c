// The registry entry for gdb trace files (formats/format_entries.h).

#include <algorithm>

#include "formats/format_entries.h"
#include "formats/tfile/tfile_format.h"
#include "formats/tfile/tfile_reader.h"
#include "formats/tfile/tfile_trace_writer.h"

namespace backstep::core {

FormatInfo TfileFormatInfo() {
  FormatInfo info;
  info.name = "tfile";
  info.description = "gdb trace file (TRACE0, tsave)";
  info.sniff = [](std::span<const std::uint8_t> head) {
    return head.size() >= kTfileMagic.size() &&
           std::equal(kTfileMagic.begin(), kTfileMagic.end(), head.begin(),
                      [](char a, std::uint8_t b) { return static_cast<std::uint8_t>(a) == b; });
  };
  info.open =
      [](std::shared_ptr<const ByteSource> source) -> Expected<std::unique_ptr<TraceReader>> {
    BACKSTEP_ASSIGN_OR_RETURN(auto reader, TfileReader::Open(std::move(source)));
    return std::unique_ptr<TraceReader>(std::move(reader));
  };
  info.create_writer = [](const std::string& path) -> Expected<std::unique_ptr<TraceWriter>> {
    return std::unique_ptr<TraceWriter>(std::make_unique<TfileTraceWriter>(path));
  };
  return info;
}

}  // namespace backstep::core
