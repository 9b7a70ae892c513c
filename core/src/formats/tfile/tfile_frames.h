// Trace frames of a tfile (docs/formats/tfile.md §3.2): the scan of frame headers done
// at open, and the decoding of one frame's blocks.
//
//   frame := i16 tpnum; u32 size; blocks[size]      tpnum 0: end marker
//   block := 'R' regblock[R] | 'M' u64 addr, u16 len, bytes[len]
//          | 'V' i32 number, i64 value | 'S' u16 len, bytes[len]
//
// The scan walks every frame and its blocks once, so that damage is found
// at open and frame n can be reached directly. It stops at the end marker,
// at the end of the file (a file may end right after a frame: gdb stops
// there too), or at the first damaged frame, whose error it keeps: the
// frames before it stay readable. Errors name the file, the frame number and
// the byte offset.
//
// Thread-safety: value types and pure functions.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "backstep/core/status.h"
#include "backstep/core/types.h"

namespace backstep::core {

struct TfileFrameHeader {
  std::uint64_t offset = 0;  // of the i16 tpnum
  std::int16_t tpnum = 0;
  std::uint32_t size = 0;  // data bytes after the 6-byte header
};

struct TfileMemoryBlock {
  Address address = 0;
  std::span<const std::uint8_t> data;  // into the file
};

struct TfileTsvValue {
  std::int32_t number = 0;
  std::int64_t value = 0;
  bool operator==(const TfileTsvValue&) const = default;
};

// One decoded frame; spans point into the file's bytes.
struct TfileFrame {
  std::uint64_t number = 0;
  TfileFrameHeader header;
  std::span<const std::uint8_t> registers;  // the first R block; empty when none
  std::vector<TfileMemoryBlock> memory;     // in file order
  std::vector<TfileTsvValue> tsv_values;    // in file order
  std::uint32_t register_blocks = 0;        // R blocks seen (gdb uses the first)
  std::uint32_t static_blocks = 0;          // S blocks, skipped

  void Clear();
};

// Decodes the blocks of the frame `header` (number `number`) from the file
// bytes `file`. REQUIRES: the header's data lies inside `file` (the scan
// checked it). Corruption names `file_name`, the frame and the offending
// block's offset.
Status DecodeTfileFrame(std::span<const std::uint8_t> file, const std::string& file_name,
                        std::uint64_t number, const TfileFrameHeader& header,
                        std::uint64_t register_block_size, TfileFrame* frame);

struct TfileScan {
  std::vector<TfileFrameHeader> frames;      // the good frames, in order
  std::uint64_t end_offset = 0;              // just after the last good frame
  bool end_marker = false;                   // stopped at tpnum 0
  Status damage;                             // Corruption at frames.size(), or OK
  std::vector<std::uint64_t> static_frames;  // frames with S blocks
};

// Scans the frames from `first` (the offset after the blank line).
TfileScan ScanTfileFrames(std::span<const std::uint8_t> file, const std::string& file_name,
                          std::uint64_t first, std::uint64_t register_block_size);

}  // namespace backstep::core
