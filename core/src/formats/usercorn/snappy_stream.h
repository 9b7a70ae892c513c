// The Snappy framing format (github.com/google/snappy framing_format.txt),
// read incrementally and written, on top of Debian's libsnappy block codec.
//
// Stream = chunks of { u8 type ; u24 LE length ; payload[length] }:
//   0xff  stream identifier, payload "sNaPpY" (first; may repeat)
//   0x00  compressed data:   u32 LE masked CRC-32C of the uncompressed data,
//                            then a snappy block of at most 65536 bytes
//   0x01  uncompressed data: u32 LE masked CRC-32C, then at most 65536 bytes
//   0xfe  padding, 0x80-0xfd reserved skippable: ignored
//   0x02-0x7f reserved unskippable: an error
// The decompressed payloads form one byte stream; nothing aligns to chunks.
//
// SnappyStream reads that byte stream from a mapped file keeping one chunk
// decompressed at a time (at most 64 KiB), so memory stays flat whatever the
// file's size. Every data chunk's CRC is checked when it is loaded; a
// mismatch, an undecodable block or a reserved type is Corruption naming
// the chunk's file offset. The end of the file, at a chunk boundary or
// inside a cut chunk, is OutOfRange ("end of data"); truncated() tells
// which. A position (SnappyPos) is the file offset of the chunk holding the
// next byte plus the offset in its data: Seek() resumes there, decoding one
// chunk.
//
// SnappyFrameWriter produces the same format as golang/snappy's
// BufferedWriter (which usercorn uses): the identifier before the first
// chunk, chunks of up to 65536 input bytes, each compressed unless that
// saves less than 1/8 (then stored uncompressed).
//
// Thread-safety: one thread at a time per object.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "backstep/core/status.h"

namespace backstep::core {

inline constexpr std::uint8_t kSnappyCompressed = 0x00;
inline constexpr std::uint8_t kSnappyUncompressed = 0x01;
inline constexpr std::uint8_t kSnappyPadding = 0xfe;
inline constexpr std::uint8_t kSnappyIdentifier = 0xff;
inline constexpr std::size_t kSnappyMaxChunkData = 65536;
// ff 06 00 00 "sNaPpY"
inline constexpr std::uint8_t kSnappyStreamIdentifier[10] = {0xff, 0x06, 0x00, 0x00, 's',
                                                             'N',  'a',  'P',  'p',  'Y'};

struct SnappyPos {
  std::uint64_t chunk = 0;   // file offset of the chunk's header
  std::uint32_t offset = 0;  // in its decompressed data (0..65536)
  bool operator==(const SnappyPos&) const = default;
};

class SnappyStream {
 public:
  // `file` is the whole file (offsets in messages and positions are file
  // offsets); the stream starts at `begin`. `name` prefixes messages.
  SnappyStream(std::span<const std::uint8_t> file, std::uint64_t begin, std::string name);

  // Checks the stream identifier and positions after it. An empty stream
  // (nothing after `begin`) is valid. Corruption for anything else than an
  // identifier, including a cut one.
  Status Start();

  // The next byte, not consumed. OutOfRange at the end of the data.
  Status Peek(std::uint8_t* byte);
  // Reads exactly `n` bytes. OutOfRange if the data ends first.
  Status Read(std::uint8_t* out, std::size_t n);
  // Appends `n` bytes to *out as they are decoded (never reserves `n`
  // before the bytes exist). OutOfRange if the data ends first.
  Status ReadAppend(std::uint64_t n, std::vector<std::uint8_t>* out);

  SnappyPos Tell() const;
  // Resumes at a position from Tell() on the same file. InvalidArgument if
  // `pos` cannot be one; Corruption if its chunk is damaged.
  Status Seek(SnappyPos pos);
  // True if the last OutOfRange came from a chunk cut by the end of the
  // file (rather than the file ending between chunks).
  bool truncated() const { return truncated_; }
  // "offset 0x<chunk> +0x<offset>" for messages.
  std::string Where() const;
  const std::string& name() const { return name_; }

 private:
  // Loads the next data chunk (skipping identifiers, padding and skippable
  // chunks, and empty data chunks).
  Status LoadNext();
  // Decodes the data chunk whose header is at `at` into data_. *is_data is
  // false (and nothing loaded) for the chunk types that carry no data.
  Status LoadAt(std::uint64_t at, bool* is_data);
  Status Fail(std::uint64_t at, const std::string& what) const;

  std::span<const std::uint8_t> file_;
  std::uint64_t begin_;
  std::string name_;
  std::vector<std::uint8_t> buffer_;    // decompressed data of a compressed chunk
  std::span<const std::uint8_t> data_;  // the loaded chunk's data (buffer_ or the file)
  std::uint64_t chunk_ = 0;             // header offset of the loaded chunk
  std::uint64_t next_ = 0;              // header offset of the chunk after it
  std::uint32_t pos_ = 0;               // next byte in data_
  bool loaded_ = false;
  bool truncated_ = false;
};

enum class SnappyChunkMode {
  kAuto,          // compressed unless it saves less than 1/8 (golang/snappy)
  kCompressed,    // always compressed
  kUncompressed,  // always stored
};

class SnappyFrameWriter {
 public:
  using Sink = std::function<void(std::span<const std::uint8_t>)>;
  // `chunk_size` (1..65536) bytes of input per chunk; smaller values make
  // ops straddle chunks in tests.
  explicit SnappyFrameWriter(Sink sink, SnappyChunkMode mode = SnappyChunkMode::kAuto,
                             std::size_t chunk_size = kSnappyMaxChunkData);

  void Write(std::span<const std::uint8_t> data);
  // Emits the buffered input as a (short) chunk. Nothing if none is buffered.
  void Flush();
  // Input bytes accepted so far.
  std::uint64_t bytes_in() const { return bytes_in_; }
  // The stream continues one written elsewhere (a part of a file that is
  // joined by concatenation): no stream identifier before the first chunk.
  void Continue() { wrote_identifier_ = true; }

 private:
  void EmitChunk(std::span<const std::uint8_t> data);

  Sink sink_;
  SnappyChunkMode mode_;
  std::size_t chunk_size_;
  std::vector<std::uint8_t> pending_;
  std::vector<std::uint8_t> scratch_;
  std::uint64_t bytes_in_ = 0;
  bool wrote_identifier_ = false;
};

}  // namespace backstep::core
