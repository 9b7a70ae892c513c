// The registry entry for REVEN traces (formats/format_entries.h).

#include "formats/format_entries.h"
#include "formats/reven/reven_format.h"
#include "formats/reven/reven_reader.h"
#include "formats/reven/reven_trace_writer.h"

namespace backstep::core {

FormatInfo RevenFormatInfo() {
  FormatInfo info;
  info.name = "reven";
  info.description = "REVEN rvnbintrace v1 (trace.bin)";
  // Both binresource magics. A trace.cache has the same magic: the reader
  // then names its resource type instead of failing to sniff.
  info.sniff = [](std::span<const std::uint8_t> head) {
    if (head.size() < 8) return false;
    std::uint64_t magic = 0;
    for (int i = 0; i < 8; ++i) magic |= std::uint64_t{head[i]} << (8 * i);
    return magic == kRevenMagic || magic == kRevenLegacyMagic;
  };
  info.open =
      [](std::shared_ptr<const ByteSource> source) -> Expected<std::unique_ptr<TraceReader>> {
    BACKSTEP_ASSIGN_OR_RETURN(auto reader, RevenReader::Open(std::move(source)));
    return std::unique_ptr<TraceReader>(std::move(reader));
  };
  info.create_writer = [](const std::string& path) -> Expected<std::unique_ptr<TraceWriter>> {
    return std::unique_ptr<TraceWriter>(std::make_unique<RevenTraceWriter>(path));
  };
  return info;
}

}  // namespace backstep::core
