#include "formats/reven/reven_container.h"

#include "formats/reven/reven_format.h"
#include "util/hex.h"

namespace backstep::core {
namespace {

constexpr std::string_view kMetadataSection = "metadata";

std::string_view ResourceTypeName(std::uint32_t type) {
  switch (type) {
    case kRevenResourceTraceBin:
      return "TraceBin (trace.bin)";
    case kRevenResourceTraceCache:
      return "TraceCache (trace.cache)";
    default:
      return "another REVEN resource";
  }
}

// One fixed-capacity string field: u64 length, chars, NUL padding. The
// length is checked against the capacity before anything is copied, as the
// reference reader does, so a damaged length cannot allocate.
Expected<std::string> ReadField(ByteReader& r, const std::string& file, std::string_view field,
                                std::uint64_t capacity) {
  const std::uint64_t at = r.offset();
  const std::uint64_t length = r.U64();
  if (!r.ok()) return RevenCorruption(file, kMetadataSection, at, "file ends inside the header");
  if (length > capacity) {
    return RevenCorruption(file, kMetadataSection, at,
                           std::string(field) + " length " + std::to_string(length) +
                               " exceeds its capacity of " + std::to_string(capacity));
  }
  std::string value(r.String(length));
  r.Skip(capacity - length);
  if (!r.ok()) return RevenCorruption(file, kMetadataSection, at, "file ends inside the header");
  return value;
}

void AppendLe(std::uint64_t v, int bytes, std::vector<std::uint8_t>* out) {
  for (int i = 0; i < bytes; ++i) out->push_back(static_cast<std::uint8_t>(v >> (8 * i)));
}

bool AppendField(std::string_view value, std::uint64_t capacity, std::vector<std::uint8_t>* out) {
  if (value.size() > capacity) return false;
  AppendLe(value.size(), 8, out);
  out->insert(out->end(), value.begin(), value.end());
  out->insert(out->end(), capacity - value.size(), 0);
  return true;
}

}  // namespace

Status RevenCorruption(const std::string& file, std::string_view section, std::uint64_t offset,
                       std::string_view what) {
  return Status::Corruption(file + ": " + std::string(section) + " at offset " + HexU64(offset) +
                            ": " + std::string(what));
}

Expected<RevenMetadata> ParseRevenMetadata(ByteReader& r, const std::string& file,
                                           std::uint32_t expected_type) {
  RevenMetadata md;
  const std::uint64_t magic = r.U64();
  if (!r.ok()) return RevenCorruption(file, kMetadataSection, 0, "file shorter than its magic");
  if (magic == kRevenMagic) {
    md.metadata_version = r.U32();
    if (!r.ok()) return RevenCorruption(file, kMetadataSection, 8, "file ends inside the header");
    if (md.metadata_version > kRevenMetadataVersion) {
      return Status::Unsupported(file + ": metadata at offset 0x8: metadata version " +
                                 std::to_string(md.metadata_version) +
                                 " is newer than backstep reads (1)");
    }
  } else if (magic == kRevenLegacyMagic) {
    md.metadata_version = 0;
  } else {
    return RevenCorruption(file, kMetadataSection, 0,
                           "bad magic " + HexU64(magic) + " (not a REVEN binresource)");
  }
  const std::uint64_t type_at = r.offset();
  md.resource_type = r.U32();
  if (!r.ok()) return RevenCorruption(file, kMetadataSection, type_at, "file ends inside header");
  if (md.resource_type != expected_type) {
    return Status::Unsupported(file + ": metadata at offset " + HexU64(type_at) +
                               ": resource type " + std::to_string(md.resource_type) + " (" +
                               std::string(ResourceTypeName(md.resource_type)) + "), expected " +
                               std::string(ResourceTypeName(expected_type)));
  }
  const std::uint64_t version_at = r.offset();
  BACKSTEP_ASSIGN_OR_RETURN(md.format_version,
                            ReadField(r, file, "format version", kRevenFormatVersionMax));
  BACKSTEP_ASSIGN_OR_RETURN(md.tool_name, ReadField(r, file, "tool name", kRevenToolNameMax));
  if (md.metadata_version >= 1) {
    BACKSTEP_ASSIGN_OR_RETURN(md.tool_version,
                              ReadField(r, file, "tool version", kRevenToolVersionMax));
  } else {
    md.tool_version.clear();
  }
  BACKSTEP_ASSIGN_OR_RETURN(md.tool_info, ReadField(r, file, "tool info", kRevenToolInfoMax));
  const std::uint64_t date_at = r.offset();
  md.generation_date = r.U64();
  if (!r.ok()) return RevenCorruption(file, kMetadataSection, date_at, "file ends inside header");
  // Semver compatibility, as the reference reader: same major version. A
  // newer minor only adds what 1.0 readers may ignore.
  const auto dot = md.format_version.find('.');
  if (md.format_version.substr(0, dot) != "1") {
    return Status::Unsupported(file + ": metadata at offset " + HexU64(version_at) +
                               ": format version \"" + md.format_version +
                               "\" is not supported (backstep reads 1.x)");
  }
  return md;
}

Status AppendRevenMetadata(const RevenMetadata& md, std::vector<std::uint8_t>* out) {
  if (md.metadata_version > 1) {
    return Status::InvalidArgument("REVEN metadata version must be 0 or 1");
  }
  if (md.metadata_version == 0) {
    AppendLe(kRevenLegacyMagic, 8, out);
  } else {
    AppendLe(kRevenMagic, 8, out);
    AppendLe(md.metadata_version, 4, out);
  }
  AppendLe(md.resource_type, 4, out);
  bool fits = AppendField(md.format_version, kRevenFormatVersionMax, out) &&
              AppendField(md.tool_name, kRevenToolNameMax, out);
  if (md.metadata_version >= 1)
    fits = fits && AppendField(md.tool_version, kRevenToolVersionMax, out);
  fits = fits && AppendField(md.tool_info, kRevenToolInfoMax, out);
  if (!fits) return Status::InvalidArgument("REVEN metadata string longer than its capacity");
  AppendLe(md.generation_date, 8, out);
  return Status::Ok();
}

Expected<ByteReader> ReadRevenSection(ByteReader& r, const std::string& file,
                                      std::string_view section) {
  const std::uint64_t at = r.offset();
  const std::uint64_t size = r.U64();
  if (!r.ok()) {
    return RevenCorruption(file, section, at, "file ends before the section's size field");
  }
  // The payload must be inside the file; the caller moves on to
  // start + 8 + size whatever it consumed (the padding rule).
  if (size > r.remaining()) {
    return RevenCorruption(file, section, at,
                           "section size " + std::to_string(size) +
                               " runs past the end of the file (" + std::to_string(r.remaining()) +
                               " bytes left)");
  }
  const std::uint64_t payload_at = r.offset();
  return ByteReader(r.Bytes(size), payload_at);
}

std::string RevenStaticValueString(std::string_view bytes) {
  if (bytes.size() <= 8) {
    std::uint64_t v = 0;
    for (std::size_t i = 0; i < bytes.size(); ++i) {
      v |= std::uint64_t(static_cast<std::uint8_t>(bytes[i])) << (8 * i);
    }
    return HexU64(v);
  }
  return HexBytes(std::span<const std::uint8_t>(reinterpret_cast<const std::uint8_t*>(bytes.data()),
                                                bytes.size()));
}

}  // namespace backstep::core
