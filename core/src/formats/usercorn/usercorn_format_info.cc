// The registry entry for usercorn UCIR traces (formats/format_entries.h).

#include <cstring>

#include "formats/format_entries.h"
#include "formats/usercorn/usercorn_format.h"
#include "formats/usercorn/usercorn_reader.h"
#include "formats/usercorn/usercorn_trace_writer.h"

namespace backstep::core {

FormatInfo UsercornFormatInfo() {
  FormatInfo info;
  info.name = "usercorn";
  info.description = "usercorn UCIR trace (snappy-framed op stream)";
  info.sniff = [](std::span<const std::uint8_t> head) {
    return head.size() >= 4 && std::memcmp(head.data(), kUcirMagic, 4) == 0;
  };
  info.open =
      [](std::shared_ptr<const ByteSource> source) -> Expected<std::unique_ptr<TraceReader>> {
    BACKSTEP_ASSIGN_OR_RETURN(auto reader, UsercornReader::Open(std::move(source)));
    return std::unique_ptr<TraceReader>(std::move(reader));
  };
  info.create_writer = [](const std::string& path) -> Expected<std::unique_ptr<TraceWriter>> {
    return std::unique_ptr<TraceWriter>(std::make_unique<UsercornTraceWriter>(path));
  };
  return info;
}

}  // namespace backstep::core
