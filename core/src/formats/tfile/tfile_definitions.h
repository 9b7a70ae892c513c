// The definition section of a tfile (docs/formats/tfile.md §3.1): the typed form of the
// `R`, `tdesc`, `status`, `tsv` and `tp` lines, their parser and their
// printer.
//
// Parsing mirrors gdb (tracefile-tfile.c, tracepoint.c): lines it would warn
// about or skip (unknown keywords, unknown tracepoint pieces, malformed
// optional fields) become entries of `warnings`, never errors. Errors are
// reserved for what gdb itself refuses: an `R` size that is not hex (or is
// 0, or absurd). Tracepoints are identified, like gdb's uploaded_tp, by
// (number, address): a tracepoint with two locations appears twice.
//
// Formatting is the exact inverse for everything gdb writes (tracefile.c
// trace_save): "tp T%x:%s:%c:%x:%x", phex_nz addresses, hex-encoded source
// strings. FormatTracepointLines(Parse(x)) == x for gdb's own lines.
//
// Thread-safety: value types and pure functions.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "backstep/core/status.h"
#include "backstep/core/types.h"

namespace backstep::core {

// A trace state variable: `tsv <n>:<initial>:<builtin>:<hexname>`.
struct TfileTsv {
  std::uint32_t number = 0;
  std::int64_t initial = 0;  // written by gdb as an unsigned 64-bit hex value
  bool builtin = false;      // gdb's own $trace_timestamp is builtin (tsv 1)
  std::string name;          // decoded, without '$'
  bool operator==(const TfileTsv&) const = default;
};

// One tracepoint location (`tp T/A/S/Z/V` lines with the same number and
// address).
struct TfileTracepoint {
  std::uint32_t number = 0;  // the target's number; frames carry it
  Address address = 0;
  bool enabled = true;
  std::uint64_t step_count = 0;  // while-stepping count (0: none)
  std::uint64_t pass_count = 0;
  std::optional<std::uint64_t> fast_size;  // ":F<len>": a fast tracepoint
  bool is_static = false;                  // ":S"
  std::string condition;                   // ":X<len>,<hex>": the bytecode, hex; "" none
  std::vector<std::string> actions;  // `tp A` payloads, as written ("R0fff...", "M-1,404040,8")
  std::vector<std::string> step_actions;  // `tp S` payloads
  std::string at_string;                  // `tp Z ... at` (decoded): "work", "prog.c:9"
  std::string cond_string;                // `tp Z ... cond` (decoded)
  std::vector<std::string> cmd_strings;   // `tp Z ... cmd` (decoded): "collect $regs", "end"
  std::optional<std::uint64_t> hits;      // `tp V`
  std::optional<std::uint64_t> traceframe_usage;
  bool defined = false;  // a `tp T` line was seen (otherwise only pieces)
  bool operator==(const TfileTracepoint&) const = default;
};

// The `status` line, split into gdb's fields (docs/formats/tfile.md §3.1). Only what was
// present is set; `line` keeps the text after "status ".
struct TfileStatus {
  std::string line;
  bool running = false;
  std::string stop_reason;  // "tstop", "tnotrun", "tfull", "tdisconnected", "tpasscount", "terror",
                            // "tunknown"
  std::string stop_notes;   // tstop's notes / terror's message (decoded)
  std::optional<std::uint64_t> stopping_tracepoint;
  std::optional<std::uint64_t> frames, created, free, size, circular, disconnected;
  std::optional<std::uint64_t> start_time, stop_time;
  std::string notes, user;  // decoded
};

struct TfileDefinitions {
  std::optional<std::uint64_t> register_block_size;  // `R` (hex in the file)
  std::vector<std::string> tdesc_lines;              // joined with '\n' = the XML
  std::optional<TfileStatus> status;
  std::vector<TfileTsv> tsvs;                // in file order
  std::vector<TfileTracepoint> tracepoints;  // in order of first appearance
  // (number, address) -> index in `tracepoints`, kept by the parser (files
  // written by an exporter hold up to 32767 tracepoints: no linear scans).
  std::map<std::pair<std::uint32_t, Address>, std::size_t> tracepoint_index;
  std::vector<std::string> warnings;  // "line 7 at offset 0x1f: unknown definition 'foo' ignored"

  std::string TdescXml() const;
  // Indexes in `tracepoints` of the locations with target number `number`,
  // in address order. Cost: O(log n) plus one per location.
  std::vector<std::size_t> FindTracepoints(std::uint32_t number) const;
  // The number gdb shows for tracepoints[index] after `target tfile` in a
  // session with no other tracepoints: gdb creates them in reverse order of
  // first appearance, numbering from 1 (docs/formats/tfile.md §3.3).
  int GdbLocalNumber(std::size_t index) const {
    return static_cast<int>(tracepoints.size() - index);
  }
};

// Parses one definition line (without its '\n'; not empty) into *defs.
// Returns Corruption only for what gdb refuses; anything else it would skip
// sets *warning (left empty otherwise). Neither names the line: the caller
// adds the file, line number and offset.
Status ParseTfileDefinitionLine(std::string_view line, TfileDefinitions* defs,
                                std::string* warning);

// Parses the text after "status " (tracepoint.c parse_trace_status). Fields
// that do not parse are left unset and named in *warning (gdb errors on a
// malformed status; backstep only describes it).
TfileStatus ParseTfileStatus(std::string_view text, std::string* warning);

// The lines gdb writes for a tracepoint: T, then A, S, Z at, Z cond, Z cmd,
// V (when hits is set). Each line is complete ("tp T2:401132:E:0:0"),
// without its '\n'.
std::vector<std::string> FormatTfileTracepointLines(const TfileTracepoint& tp);
// "tsv 2:0:0:68697473".
std::string FormatTfileTsvLine(const TfileTsv& tsv);

// Readable one-line summaries for `backstep info` (header properties):
// "0x401132 enabled, step 0, pass 0, hits 5, gdb number 1, at "work": collect $regs; ..."
std::string DescribeTfileTracepoint(const TfileTracepoint& tp, int gdb_number);
// "$hits initial 0" / "$trace_timestamp initial 0, builtin".
std::string DescribeTfileTsv(const TfileTsv& tsv);
// "not running, stopped by tstop, 15 frames (15 created), buffer 0x500000 bytes, 0x4f9c91 free,
// ..."
std::string DescribeTfileStatus(const TfileStatus& status);

}  // namespace backstep::core
