// FormatEntry<Reader, Writer>(): a format's registry entry (FormatInfo) made
// from its reader and writer classes, so that a format is one folder with a
// reader, a writer and one line in format_registry.cc's list.
//
// Reader (a TraceReader) provides:
//   static constexpr std::string_view kFormatName;         // "reven"
//   static constexpr std::string_view kFormatDescription;  // for `info`
//   static bool Sniff(std::span<const std::uint8_t> head);  // magic bytes
//   static Expected<std::unique_ptr<Reader>> Open(std::shared_ptr<const ByteSource>);
// Writer is a TraceWriter constructible from the destination path, or void
// for a format backstep only reads.
//
// Thread-safety: the entry's functions are stateless.
#pragma once

#include <memory>
#include <string>
#include <type_traits>

#include "backstep/core/format_registry.h"

namespace backstep::core {

template <class Reader, class Writer = void>
FormatInfo FormatEntry() {
  FormatInfo info;
  info.name = Reader::kFormatName;
  info.description = Reader::kFormatDescription;
  info.sniff = &Reader::Sniff;
  info.open =
      [](std::shared_ptr<const ByteSource> source) -> Expected<std::unique_ptr<TraceReader>> {
    BACKSTEP_ASSIGN_OR_RETURN(std::unique_ptr<Reader> reader, Reader::Open(std::move(source)));
    return std::unique_ptr<TraceReader>(std::move(reader));
  };
  if constexpr (!std::is_void_v<Writer>) {
    info.create_writer = [](const std::string& path) -> Expected<std::unique_ptr<TraceWriter>> {
      return std::unique_ptr<TraceWriter>(std::make_unique<Writer>(path));
    };
  }
  return info;
}

}  // namespace backstep::core
