// TfileExporter: `backstep export`, a trace's positions as a gdb trace file
// (TRACE0) that stock gdb 13.1 walks with `target tfile` and `tfind`.
//
// Unlike `convert --to tfile` (tfile_trace_writer.h), the export is laid out
// for gdb (docs/formats/tfile.md, "Exporting"):
//
//   * frame n is the state at the n-th selected position P (before event P
//     executes, as a tracepoint hit collects it): the full register state of
//     the thread that executes event P in the R block (816-byte layout, with
//     its tdesc), and M blocks for
//       - a stack window [rsp - stack_below, rsp + stack_above),
//       - the memory event P reads and writes, as it is at P (virtual traces
//         only: a physical trace's accesses have no virtual address; at most
//         kTfileExportAccessLimit bytes per frame),
//       - every range of `memory` (--mem ADDR:LEN);
//     only known bytes are written (an unknown byte splits the block);
//   * one tracepoint per distinct pc (gdb's `tfind pc/line/range` compare
//     the frame's tracepoint address), numbered in order of first appearance,
//     written in descending order so gdb's local numbers equal them. More
//     than 32767 distinct pcs (tracepoint numbers are i16) is refused with a
//     message suggesting --from/--to/--at-pc;
//   * a V block of tsv 1 `$backstep_position` = P in every frame;
//   * every frame has the same size (padded with empty M blocks at address 0
//     and repeated V blocks): gdb 13.1's seek bug in pc/range/outside/line
//     scans (docs/protocol.md §9) then lands on frame headers and finds the right
//     frames.
//
// Two passes over the selected positions: the first collects the distinct
// pcs and the frame sizes, the second writes. Memory stays bounded by one
// frame plus the pc table (<= 32767 entries). The output goes through
// AtomicFile; the trace is only read.
//
// Thread-safety: one export at a time per Trace cursor; no shared state.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "backstep/core/expected.h"
#include "backstep/core/progress.h"
#include "backstep/core/trace.h"
#include "backstep/core/types.h"

namespace backstep::core {

// Per frame, the instruction's own accesses are cut after this many bytes
// (a `rep movsb` of megabytes would otherwise make every frame that large).
inline constexpr std::uint64_t kTfileExportAccessLimit = 64 * 1024;
// A single --mem range is limited to this (frames are at most 4 GiB and every
// frame carries every range).
inline constexpr std::uint64_t kTfileExportMemoryLimit = 16 * 1024 * 1024;

struct TfileMemoryRange {
  Address address = 0;
  std::uint64_t length = 0;
  bool operator==(const TfileMemoryRange&) const = default;
};

// Parses "ADDR:LEN" (decimal or 0x hex each, "0x601040:64"). InvalidArgument
// naming `spec` and what is wrong with it.
Expected<TfileMemoryRange> ParseTfileMemoryRange(std::string_view spec);

struct TfileExportOptions {
  Position from{0};             // first position (inclusive)
  std::optional<Position> to;   // last position (inclusive); default: the trace's end
  std::uint64_t every = 1;      // every K-th position from `from`
  std::vector<Address> at_pcs;  // only positions whose pc is one of these (with every == 1)
  std::vector<TfileMemoryRange> memory;  // --mem ranges, in every frame
  std::uint64_t stack_below = 256;       // stack window below rsp (the red zone is 128)
  std::uint64_t stack_above = 1024;      // and from rsp upward
  ProgressFn progress;                   // ("exporting: scan"/"exporting: write", done, total)
};

struct TfileExportSummary {
  std::uint64_t frames = 0;
  std::uint64_t tracepoints = 0;  // distinct pcs
  std::uint64_t frame_size = 0;   // data bytes of every frame (equal sizes)
  std::uint64_t padding = 0;      // bytes of padding over all frames
};

// Exports `trace` to `path` (atomically). Errors: InvalidArgument naming the
// option (--from after --to, positions past the end, --every 0, --every with
// --at-pc, an empty --mem range, too many distinct pcs or frames, no frame
// selected), Unsupported for non-x86-64 traces, Interrupted when `progress`
// returns false (nothing is written), the trace's own read errors.
Expected<TfileExportSummary> ExportTfile(const Trace& trace, const std::string& path,
                                         const TfileExportOptions& options);
// The same into a byte vector (tests).
Expected<TfileExportSummary> ExportTfileToMemory(const Trace& trace, std::vector<std::uint8_t>* out,
                                                 const TfileExportOptions& options);

}  // namespace backstep::core
