// UsercornReader: the TraceReader for usercorn UCIR traces.
//
// Open() checks the 74-byte header (big-endian version 0 or 1; an
// architecture with a register table, x86_64 today, else Unsupported naming
// it; little-endian byte orders), the snappy stream identifier, and decodes
// the keyframe once: its registers become the initial registers and its
// mappings and data the initial image, which the reader keeps in memory
// (at most kMaxKeyframeData bytes, else Unsupported). It then reads up to
// the first instruction: the first JMP gives the initial rip. Events are
// decoded lazily by Next() (usercorn_events.h for the event model), one
// decompressed chunk at a time.
//
// Initial state: the keyframe's thread (ThreadId(pid + 1), pid 0 in every
// usercorn trace, so thread 1) knows every tracked register (0 unless the
// keyframe sets it, as the tracer sends only non-zero ones), the optional
// ones the keyframe sets, and rip when a JMP precedes the first
// instruction. Memory: every byte of a keyframe mapping is known (zero
// unless written), and so is every byte a keyframe MEM_WRITE writes. A
// trace without a keyframe (its first op is not one) starts with
// everything unknown but rip.
//
// Header: format "usercorn", X86_64(), virtual addresses, no declared event
// count, records_reads only when the keyframe declares it with a MEM_READ
// of size 0 (`backstep record` records every read), read_values false
// (MEM_READ holds no value: queries take it from memory), the keyframe's
// mappings as regions. Properties: version, os, keyframe summary, initial
// pc, "unmapped registers" (Unicorn enums of the keyframe that backstep
// ignores) and "keyframe warning" for data usercorn's trimming bug
// probably misplaced (usercorn_image.h).
//
// ReaderPosition: usercorn_events.h (UsercornCursor) packed as in
// usercorn_format.h. Files of 2^47 bytes or more are Unsupported.
//
// Thread-safety: as TraceReader (one thread at a time; the source may be
// shared).
#pragma once

#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "backstep/core/trace_reader.h"
#include "backstep/core/usercorn_registers.h"
#include "formats/usercorn/snappy_stream.h"
#include "formats/usercorn/usercorn_events.h"
#include "formats/usercorn/usercorn_image.h"

namespace backstep::core {

class UsercornReader final : public TraceReader {
 public:
  // Registry entry (formats/format_entry.h).
  static constexpr std::string_view kFormatName = "usercorn";
  static constexpr std::string_view kFormatDescription =
      "usercorn UCIR trace (snappy-framed op stream)";
  static bool Sniff(std::span<const std::uint8_t> head);
  // Corruption (bad header, stream identifier or keyframe, naming the file
  // and offset) or Unsupported (architecture, version, byte order, limits).
  static Expected<std::unique_ptr<UsercornReader>> Open(std::shared_ptr<const ByteSource> source);

  const TraceHeader& header() const override { return header_; }
  const ByteSource& source() const override { return *source_; }
  std::vector<std::pair<ThreadId, RegisterFile>> InitialRegisters() const override;
  void ReadInitialMemory(Address address, std::span<std::uint8_t> out,
                         std::span<std::uint8_t> known) const override {
    image_.Read(address, out, known);
  }
  ReaderPosition Tell() const override { return EncodeUsercornCursor(cursor_); }
  // InvalidArgument for a position no reader of this file produced;
  // Corruption if the chunk it points into is damaged. Cost: one chunk.
  Status Seek(const ReaderPosition& pos) override;
  Expected<bool> Next(Event* event) override;

  // The format's own view, for tools and tests.
  std::uint32_t version() const { return version_; }
  const std::string& os() const { return os_; }
  bool has_keyframe() const { return keyframe_pid_.has_value(); }

 private:
  explicit UsercornReader(std::shared_ptr<const ByteSource> source);
  Status ParseHeader();
  Status ReadKeyframe(UsercornCursor* cursor);
  Status ApplyKeyframeOp(const UcirOpFields& op, SnappyPos at, RegisterFile& regs);
  void FillHeader(std::optional<Address> pc);

  std::shared_ptr<const ByteSource> source_;
  TraceHeader header_;
  const UsercornArch* arch_ = nullptr;
  std::uint32_t version_ = 0;
  std::string os_;
  SnappyStream stream_;
  std::unique_ptr<UsercornEventDecoder> decoder_;
  UsercornImage image_;
  std::vector<std::pair<ThreadId, RegisterFile>> initial_;
  std::optional<std::uint64_t> keyframe_pid_;
  std::vector<std::uint8_t> arena_;     // one keyframe op's data at a time
  std::vector<std::uint16_t> ignored_;  // keyframe REG enums with no register
  std::optional<UcirOpFields> last_map_;
  std::uint64_t keyframe_registers_ = 0, keyframe_maps_ = 0;
  bool declares_reads_ = false;  // a keyframe MEM_READ of size 0
  UsercornCursor cursor_;
};

}  // namespace backstep::core
