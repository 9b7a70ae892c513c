// The container shared by trace.bin and trace.cache: binresource metadata and
// section framing (docs/formats/reven.md §1.1-1.2).
//
// Metadata: magic u64 | [metadata_version u32 when the magic is the new one]
// | resource type u32 | format_version, tool_name, [tool_version when
// version >= 1], tool_info: each u64 length + chars + NUL padding to a fixed
// capacity | generation_date u64.
// Section: u64 size | payload (may end with padding) -- the next section
// starts at start + 8 + size whatever the payload parser consumed.
//
// Thread-safety: free functions over values.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "backstep/core/expected.h"
#include "util/byte_reader.h"

namespace backstep::core {

struct RevenMetadata {
  std::uint32_t metadata_version = 1;  // 0: legacy magic, no tool_version field
  std::uint32_t resource_type = 1;     // kRevenResourceTraceBin / kRevenResourceTraceCache
  std::string format_version = "1.0.1";
  std::string tool_name = "backstep";
  std::string tool_version = "1.0.0";  // absent from version-0 files
  std::string tool_info = "backstep - using rvnbintrace 1.0.1";
  std::uint64_t generation_date = 0;  // Unix seconds
};

// "<file>: <section> at offset 0x<offset>: <what>" as a Corruption.
Status RevenCorruption(const std::string& file, std::string_view section, std::uint64_t offset,
                       std::string_view what);

// Parses the metadata at the start of `r` (which must start at file offset
// 0) and leaves `r` at the first section. Checks the magic, the metadata
// version, that the resource type is `expected_type` and that the format
// version has major 1. Never allocates more than the fixed string
// capacities.
Expected<RevenMetadata> ParseRevenMetadata(ByteReader& r, const std::string& file,
                                           std::uint32_t expected_type);

// Appends the encoded metadata. InvalidArgument when a string exceeds its
// capacity or the metadata version is not 0 or 1.
Status AppendRevenMetadata(const RevenMetadata& md, std::vector<std::uint8_t>* out);

// Reads one section header at r's position: returns a reader over the
// payload (offsets still counted from the start of the file) and moves `r`
// past the whole section. Corruption, naming `section`, when the size field
// is cut or the payload runs past the end of the file.
Expected<ByteReader> ReadRevenSection(ByteReader& r, const std::string& file,
                                      std::string_view section);

// Property-friendly rendering of a static register value: "0x28" for up to
// 8 bytes (little-endian), hex bytes beyond.
std::string RevenStaticValueString(std::string_view bytes);

}  // namespace backstep::core
