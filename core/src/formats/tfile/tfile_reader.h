// TfileReader: the TraceReader for gdb trace files (TRACE0, `tsave`).
//
// Open() reads the definition lines (R, tdesc, status, tsv, tp), builds the
// R-block layout (tfile_layout.h) and scans every frame once
// (tfile_frames.h); Next() decodes one frame per call. Nothing is copied:
// register and memory bytes are read from the mapped file.
//
// Events: frame n is event n, of kind kFrame with flags kEventClearsRegisters
// | kEventClearsMemory (a frame knows exactly what it collected), thread
// ThreadId(1). Position 0 is before the first frame (nothing known); position
// n + 1 is frame n's state:
//   * registers: its first R block, through the layout; without an R block,
//     only the pc := the address of its tracepoint, when the frame's target
//     tracepoint number has exactly one location and no while-stepping (gdb's
//     guess, docs/formats/tfile.md §3.3); otherwise no register at all;
//   * memory: its M blocks, listed in *reverse* file order, so that where
//     blocks overlap the first one wins, as in gdb (tfile_xfer_partial
//     serves a read from the first block containing its start);
//   * description: "tracepoint 4, $hits = 5": the frame's tracepoint and its
//     V blocks (trace state variables, by name when a `tsv` line names them);
//   * S blocks (static-tracepoint data) are skipped and named in the header.
// Header: format "tfile", X86_64(), virtual addresses, no reads, no regions,
// declared_events = the status line's tframes when present. Properties, for
// `backstep info`: "register block", "register layout", "unmapped
// registers", "trace status", "frames", one "tsv N" per variable ("$hits
// initial 0"), one "tracepoint N" per location ("0x401132 enabled, step 0,
// pass 0, hits 5, gdb number 1, collects: collect $regs; ..."), the first
// 200 of each, "warning"s (the first 50).
//
// Errors: Open() fails for a bad magic, a line of 1000+ characters, a
// missing/zero/non-hex R size, definitions that never end (Corruption), or
// a tdesc for another architecture (Unsupported). A malformed tdesc is
// ignored with a warning (gdb does the same) and the layout is assumed from
// the R size. Damage inside the frames does not fail Open(): frames before it
// read normally and Next() returns the Corruption when it reaches it. Every
// message names the file and the line number or byte offset (and frame).
//
// ReaderPosition: offset = file offset of the next frame, aux = its number;
// EventPosition() gives any frame's, so a cursor reaches frame n by decoding
// frame n alone (every frame clears the registers), whatever n.
//
// Layout and quirks: docs/formats/tfile.md. Thread-safety: as TraceReader
// (one thread at a time; the source may be shared).
#pragma once

#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "backstep/core/trace_reader.h"
#include "formats/tfile/tfile_definitions.h"
#include "formats/tfile/tfile_frames.h"
#include "formats/tfile/tfile_layout.h"

namespace backstep::core {

class TfileReader final : public TraceReader {
 public:
  // Registry entry (formats/format_entry.h).
  static constexpr std::string_view kFormatName = "tfile";
  static constexpr std::string_view kFormatDescription = "gdb trace file (TRACE0, tsave)";
  static bool Sniff(std::span<const std::uint8_t> head);
  static Expected<std::unique_ptr<TfileReader>> Open(std::shared_ptr<const ByteSource> source);

  const TraceHeader& header() const override { return header_; }
  const ByteSource& source() const override { return *source_; }
  // One thread, ThreadId(1), with every register unknown.
  std::vector<std::pair<ThreadId, RegisterFile>> InitialRegisters() const override;
  // Nothing is known at position 0.
  void ReadInitialMemory(Address address, std::span<std::uint8_t> out,
                         std::span<std::uint8_t> known) const override;
  ReaderPosition Tell() const override;
  // InvalidArgument unless `pos` is a frame boundary that Tell() can return.
  Status Seek(const ReaderPosition& pos) override;
  Expected<bool> Next(Event* event) override;
  // Frame `event`'s place, from the frame table Open() built.
  std::optional<ReaderPosition> EventPosition(std::uint64_t event) const override;

  // --- the format's own view (exporter, tfind, tools, tests) ---
  const TfileDefinitions& definitions() const { return defs_; }
  // Tracepoint locations in order of first appearance in the file.
  const std::vector<TfileTracepoint>& tracepoints() const { return defs_.tracepoints; }
  const std::vector<TfileTsv>& tsvs() const { return defs_.tsvs; }
  const TfileRegisterLayout& layout() const { return *layout_; }
  // Frames that decode (before the end marker, the end of the file or the
  // first damage).
  std::uint64_t frame_count() const { return frames_.size(); }
  // The first damage, at frame frame_count() (OK when none).
  const Status& damage() const { return damage_; }
  // The target tracepoint number of frame n. REQUIRES: n < frame_count().
  int frame_tracepoint(std::uint64_t n) const { return frames_[n].tpnum; }
  // The tracepoint location of frame n when its number has exactly one
  // (what gdb's `tfind pc` compares, docs/formats/tfile.md §3.3), else nullptr.
  // REQUIRES: n < frame_count().
  const TfileTracepoint* FrameTracepoint(std::uint64_t n) const;
  // Decodes frame n's blocks: R block, M blocks, V values (the tsv values
  // of that frame), S count. Spans stay valid while the reader lives.
  // REQUIRES: n < frame_count(). Cost: one pass over the frame's blocks.
  Expected<TfileFrame> ReadFrame(std::uint64_t n) const;
  // Frame n's registers in an X86_64() file, as Next() reports them.
  Expected<RegisterFile> FrameRegisters(std::uint64_t n) const;
  // The name of trace state variable `number` ("hits"), or "" if undefined.
  std::string TsvName(std::int32_t number) const;

 private:
  explicit TfileReader(std::shared_ptr<const ByteSource> source);
  Status ParseDefinitions();
  Status BuildLayout();
  void FillHeader(const TfileScan& scan);
  // Register writes of a decoded frame (R block, or the tracepoint's pc).
  void FrameRegisterWrites(const TfileFrame& frame, std::vector<RegisterWrite>* out) const;

  std::shared_ptr<const ByteSource> source_;
  std::span<const std::uint8_t> data_;
  TraceHeader header_;
  TfileDefinitions defs_;
  std::optional<TfileRegisterLayout> layout_;
  std::uint64_t first_frame_ = 0;  // offset after the blank line
  std::vector<TfileFrameHeader> frames_;
  std::uint64_t end_offset_ = 0;  // after the last good frame
  Status damage_;
  std::uint64_t next_ = 0;  // number of the next frame
  TfileFrame frame_;        // Next()'s scratch (spans into data_)
  std::string description_;
};

}  // namespace backstep::core
