// The registry entry for BAP frames traces (formats/format_entries.h).

#include "formats/bap/bap_format.h"
#include "formats/bap/bap_reader.h"
#include "formats/bap/bap_trace_writer.h"
#include "formats/format_entries.h"

namespace backstep::core {

FormatInfo BapFormatInfo() {
  FormatInfo info;
  info.name = "bap";
  info.description = "BAP frames trace (protobuf frames in BAP's container)";
  info.sniff = [](std::span<const std::uint8_t> head) {
    if (head.size() < 8) return false;
    std::uint64_t magic = 0;
    for (int i = 0; i < 8; ++i) magic |= std::uint64_t{head[i]} << (8 * i);
    return magic == kBapMagic;
  };
  info.open =
      [](std::shared_ptr<const ByteSource> source) -> Expected<std::unique_ptr<TraceReader>> {
    BACKSTEP_ASSIGN_OR_RETURN(auto reader, BapReader::Open(std::move(source)));
    return std::unique_ptr<TraceReader>(std::move(reader));
  };
  info.create_writer = [](const std::string& path) -> Expected<std::unique_ptr<TraceWriter>> {
    return std::unique_ptr<TraceWriter>(std::make_unique<BapTraceWriter>(path));
  };
  return info;
}

}  // namespace backstep::core
