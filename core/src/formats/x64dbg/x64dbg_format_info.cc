// The registry entry for x64dbg traces (formats/format_entries.h).

#include <cstring>

#include "formats/format_entries.h"
#include "formats/x64dbg/x64dbg_format.h"
#include "formats/x64dbg/x64dbg_reader.h"
#include "formats/x64dbg/x64dbg_trace_writer.h"

namespace backstep::core {

FormatInfo X64dbgFormatInfo() {
  FormatInfo info;
  info.name = "x64dbg";
  info.description = "x64dbg trace (.trace64 x86-64, .trace32 i386)";
  info.sniff = [](std::span<const std::uint8_t> head) {
    return head.size() >= 4 && std::memcmp(head.data(), kX64dbgMagic, 4) == 0;
  };
  info.open =
      [](std::shared_ptr<const ByteSource> source) -> Expected<std::unique_ptr<TraceReader>> {
    BACKSTEP_ASSIGN_OR_RETURN(auto reader, X64dbgReader::Open(std::move(source)));
    return std::unique_ptr<TraceReader>(std::move(reader));
  };
  info.create_writer = [](const std::string& path) -> Expected<std::unique_ptr<TraceWriter>> {
    return std::unique_ptr<TraceWriter>(std::make_unique<X64dbgTraceWriter>(path));
  };
  return info;
}

}  // namespace backstep::core
