// Constants of gdb's trace file format, TRACE0 ("tfile").
//
// Prose, quirks and what gdb does with these files: docs/formats/tfile.md;
// the normative reference is docs/formats/tfile.md §3 (and docs/protocol.md §9 for
// the exporter). Frames are in the target's byte order; backstep reads and
// writes x86-64 only, so everything binary here is little-endian.
//
// File layout:
//   "\x7fTRACE0\n"                       magic (8 bytes)
//   definition lines, '\n'-terminated     R, tdesc, status, tsv, tp (ASCII)
//   "\n"                                  a blank line ends the definitions
//   frames                                i16 tpnum; u32 size; size bytes of blocks
//   end marker                            tpnum 0 (gdb writes a u32 0), or EOF
// Blocks: 'R' regblock[R size] | 'M' u64 address, u16 length, bytes |
//         'V' i32 tsv number, i64 value | 'S' u16 length, bytes (gdbserver's
//         static-tracepoint data; backstep skips it).
//
// Thread-safety: constants only.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace backstep::core {

// The magic: gdb checks byte 0 = 0x7f and "TRACE0\n" after it.
inline constexpr std::string_view kTfileMagic{"\x7fTRACE0\n", 8};

// gdb's line buffer: a definition line of this many characters (without its
// '\n') or more is "Excessively long lines in trace file".
inline constexpr std::size_t kTfileMaxLineLength = 1000;

// Frame header: i16 tpnum, u32 data size. tpnum 0 ends the frames.
inline constexpr std::size_t kTfileFrameHeaderSize = 6;

// Block type bytes.
inline constexpr std::uint8_t kTfileBlockRegisters = 'R';
inline constexpr std::uint8_t kTfileBlockMemory = 'M';
inline constexpr std::uint8_t kTfileBlockTsv = 'V';
inline constexpr std::uint8_t kTfileBlockStatic = 'S';

// Bytes after the type byte, before the data: M = u64 address + u16 length,
// V = i32 number + i64 value (no data), S = u16 length.
inline constexpr std::size_t kTfileMemoryBlockHeader = 8 + 2;
inline constexpr std::size_t kTfileTsvBlockSize = 4 + 8;
inline constexpr std::size_t kTfileStaticBlockHeader = 2;
// An M block holds at most this many bytes (u16 length); writers split.
inline constexpr std::size_t kTfileMaxMemoryBlock = 0xffff;

// Largest `R` size backstep accepts. gdb has no limit; the largest real
// layout (x86-64 with AVX-512 and PKU) is 2420 bytes.
inline constexpr std::uint64_t kTfileMaxRegisterBlock = 1u << 20;

// Frame numbers, tracepoint numbers are C ints in gdb; a frame's tpnum is an
// i16 in the file, so at most this many distinct tracepoints can own frames.
inline constexpr int kTfileMaxFrameTracepoint = 0x7fff;

}  // namespace backstep::core
