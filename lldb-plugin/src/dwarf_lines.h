// Which DWARF line rows gdb folds into the row before them.
//
// gdb's DWARF reader (gdb 13, dwarf_record_line_p) does not record a row
// that repeats the previous row's line in the same file when that line has
// had a non-zero discriminator (loop headers and loop bodies at -O0): both
// rows then step as one range. LLDB's SB API exposes no discriminators, so
// to land where gdb lands the plugin reads them from .debug_line itself.
//
// Only the line-number program is decoded (DWARF 2 to 5, 32- and 64-bit
// units); the file tables are skipped with header_length. Malformed input
// ends the decoding of that unit: the rows found so far are kept.
//
// Cost: linear in the section size. Thread-safety: a pure function.
#pragma once

#include <cstdint>
#include <span>
#include <unordered_set>

namespace backstep::lldb_plugin {

// File addresses of the rows gdb would not record, over every unit of
// `debug_line` (the section's bytes).
std::unordered_set<std::uint64_t> FoldedLineRows(std::span<const std::uint8_t> debug_line);

}  // namespace backstep::lldb_plugin
