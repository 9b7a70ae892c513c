// Constants of usercorn's UCIR trace format (docs/formats/usercorn.md §2).
//
// File = 74-byte header, then a Snappy *framing-format* stream whose
// decompressed bytes are the op stream:
//
//   "UCIR" | u32 version (BIG-endian) | char arch[32] | char os[32] |
//   u8 code_order | u8 data_order            (74 bytes)
//   ff 06 00 00 "sNaPpY"                     stream identifier chunk
//   { u8 type ; u24 LE length ; payload }    chunks (snappy_stream.h)
//
// Ops (all little-endian, after decompression), one byte of type first:
//   0 NOP | 1 FRAME u64 pid u32 n {op}n | 2 KEYFRAME (as FRAME) |
//   3 JMP u64 addr u32 block_size | 4 STEP u8 size | 5 REG u16 enum u64 value |
//   6 SPREG u16 enum u16 len bytes | 7 MEM_READ u64 addr u32 size |
//   8 MEM_WRITE u64 addr u32 len bytes |
//   9 MEM_MAP u64 addr u64 size u8 prot u64 file_off u64 file_len
//             u16 desc_len u16 file_name_len desc file_name |
//   10 MEM_UNMAP u64 addr u64 size | 11 MEM_PROT u64 addr u64 size u8 prot |
//   12 SYSCALL u32 num u64 ret u8 nargs u16 n u64 args[nargs] {op}n | 13 EXIT
//
// How backstep maps ops to events, the quirks it reproduces and what it does
// not carry: docs/formats/usercorn.md.
//
// Thread-safety: constants only.
#pragma once

#include <cstdint>

#include "backstep/core/usercorn_recording.h"

namespace backstep::core {

// --- header (docs/formats/usercorn.md §2.1) ---
inline constexpr char kUcirMagic[4] = {'U', 'C', 'I', 'R'};
inline constexpr std::uint64_t kUcirHeaderSize = 74;
inline constexpr std::uint64_t kUcirNameSize = 32;  // arch and os fields
// The reference writer puts 1 (its PROTOCOL.md says 0): both are read.
inline constexpr std::uint32_t kUcirVersion = 1;
inline constexpr std::uint8_t kUcirLittleEndian = 0;
inline constexpr std::uint8_t kUcirBigEndian = 1;

// --- ops (docs/formats/usercorn.md §2.2) ---
enum UcirOp : std::uint8_t {
  kOpNop = 0,
  kOpFrame = 1,
  kOpKeyframe = 2,
  kOpJmp = 3,
  kOpStep = 4,
  kOpReg = 5,
  kOpSpReg = 6,
  kOpMemRead = 7,
  kOpMemWrite = 8,
  kOpMemMap = 9,
  kOpMemUnmap = 10,
  kOpMemProt = 11,
  kOpSyscall = 12,
  kOpExit = 13,
};
inline constexpr std::uint8_t kUcirMaxOp = kOpExit;

// Bytes after the type byte, for the fixed-size ops and op headers.
inline constexpr std::size_t kFrameHeaderBytes = 8 + 4;
inline constexpr std::size_t kJmpBytes = 8 + 4;
inline constexpr std::size_t kRegBytes = 2 + 8;
inline constexpr std::size_t kSpRegHeaderBytes = 2 + 2;
inline constexpr std::size_t kMemReadBytes = 8 + 4;
inline constexpr std::size_t kMemWriteHeaderBytes = 8 + 4;
inline constexpr std::size_t kMemMapHeaderBytes = 8 + 8 + 1 + 8 + 8 + 2 + 2;
inline constexpr std::size_t kMemUnmapBytes = 8 + 8;
inline constexpr std::size_t kMemProtBytes = 8 + 8 + 1;
inline constexpr std::size_t kSyscallHeaderBytes = 4 + 8 + 1 + 2;

// MEM_MAP / MEM_PROT protection bits: kProtRead, kProtWrite, kProtExec
// (backstep/core/usercorn_recording.h).

// --- limits backstep enforces (docs/formats/usercorn.md) ---
// Data the keyframe may hold (kept in memory for ReadInitialMemory).
inline constexpr std::uint64_t kMaxKeyframeData = std::uint64_t{4} << 30;
// Data one event may carry (its writes are held until the next event).
inline constexpr std::uint64_t kMaxEventData = std::uint64_t{4} << 30;
// A MEM_MAP after the keyframe zero-fills the new mapping (usercorn's replay
// maps zeroed memory) when it is at most this large; larger mappings are only
// described (a fill would copy the whole mapping into the index).
inline constexpr std::uint64_t kMaxMapZeroFill = std::uint64_t{1} << 20;
// ReaderPosition packing: offset = chunk_offset << 17 | offset in the chunk's
// data (0..65536); aux = ops left in the frame (32 bits) | pending exit
// marker (bit 32) | pid (bits 33..63).
inline constexpr int kPositionChunkShift = 17;
inline constexpr std::uint64_t kMaxFileSize = std::uint64_t{1} << (64 - kPositionChunkShift);
inline constexpr std::uint64_t kMaxPid = (std::uint64_t{1} << 31) - 2;

}  // namespace backstep::core
