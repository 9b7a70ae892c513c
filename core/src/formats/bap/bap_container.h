// The BAP frames container (bap_format.h has the layout): header, meta
// frame, TOC, and length-prefixed frames, checked against the file before
// anything is allocated.
//
// ParseBapContainer() reads the 48-byte header, the meta frame (v >= 2) and
// checks the TOC: T = 0 (no TOC: an unfinished trace) is accepted; T past
// the end of the file means a cut file (frames are read to EOF and a note
// says so); otherwise T must lie after the frames' start, hold m >= 1 and a
// whole number of u64 entries, each an offset in [48, T], non-decreasing.
// The TOC is described, not trusted: producers disagree on its entries
// (docs/formats/bap.md §4.1), so frames are always found by their length prefixes.
//
// BapFrameAt() decodes the frame whose length field is at `offset` into
// `frame` (protobuf, no allocation beyond what the frame's own bytes need:
// its length is checked against the frames region first).
//
// Errors are Corruption naming the file and offset; an architecture or
// version backstep does not read is Unsupported.
//
// Thread-safety: pure functions over a caller's span.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "backstep/core/expected.h"
#include "formats/bap/bap_frames.pb.h"

namespace backstep::core {

struct BapContainer {
  std::uint64_t version = 0;
  std::uint64_t arch = 0, machine = 0;
  std::uint64_t declared_frames = 0;          // n (0: the writer did not finish)
  std::uint64_t toc_offset = 0;               // T (0: none)
  std::optional<bap_proto::meta_frame> meta;  // v >= 2
  std::uint64_t frames_start = 0;             // offset of the first frame's length field
  std::uint64_t frames_end = 0;               // T, or EOF without a usable TOC
  std::uint64_t toc_frames_per_entry = 0;     // m (0: no TOC)
  std::uint64_t toc_entries = 0;
  std::string toc_note;  // for `backstep info`: what the TOC holds or why it is not used
};

// `data` is the whole file; `file` its name for messages.
Expected<BapContainer> ParseBapContainer(std::span<const std::uint8_t> data,
                                         const std::string& file);

// Decodes frame number `index` (for messages) whose length field is at
// `offset` < container.frames_end. Returns the offset of the next frame.
Expected<std::uint64_t> BapFrameAt(std::span<const std::uint8_t> data, const std::string& file,
                                   const BapContainer& container, std::uint64_t offset,
                                   std::uint64_t index, google::protobuf::Message* frame);

}  // namespace backstep::core
