// usercorn fixtures for tests and fuzz seeds: a hand builder of UCIR bytes
// that shares no code with UsercornWriter or the reader (its own bitwise
// CRC-32C, libsnappy called directly), so that a writer/reader pair sharing
// a misunderstanding of docs/formats/usercorn.md §2 cannot pass; small valid traces from
// the writer that use every op; and a generated trace of any length.
//
// Thread-safety: value types and pure functions.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "formats/usercorn/snappy_stream.h"

namespace backstep::core::testing {

// Little-endian byte builder for op streams.
class UcirBytes {
 public:
  UcirBytes& U8(std::uint64_t v) { return Le(v, 1); }
  UcirBytes& U16(std::uint64_t v) { return Le(v, 2); }
  UcirBytes& U32(std::uint64_t v) { return Le(v, 4); }
  UcirBytes& U64(std::uint64_t v) { return Le(v, 8); }
  UcirBytes& Le(std::uint64_t v, int n) {
    for (int i = 0; i < n; ++i) bytes_.push_back(static_cast<std::uint8_t>(v >> (8 * i)));
    return *this;
  }
  UcirBytes& Str(std::string_view s) {
    bytes_.insert(bytes_.end(), s.begin(), s.end());
    return *this;
  }
  UcirBytes& Bytes(std::span<const std::uint8_t> b) {
    bytes_.insert(bytes_.end(), b.begin(), b.end());
    return *this;
  }
  std::size_t size() const { return bytes_.size(); }
  std::vector<std::uint8_t>& bytes() { return bytes_; }

 private:
  std::vector<std::uint8_t> bytes_;
};

// CRC-32C, bit by bit (independent of formats/usercorn/crc32c.h).
std::uint32_t ReferenceCrc32c(std::span<const std::uint8_t> data);

struct UcirFileSpec {
  std::uint32_t version = 1;
  std::string arch = "x86_64", os = "linux";
  std::uint8_t code_order = 0, data_order = 0;
  std::size_t chunk = 65536;  // op bytes per chunk
  bool compressed = false;    // type 0x00 chunks (libsnappy) instead of 0x01
};
// The 74-byte header.
std::vector<std::uint8_t> HandUcirHeader(const UcirFileSpec& spec = {});
// Stream identifier + `data` in chunks.
std::vector<std::uint8_t> HandSnappyFrames(std::span<const std::uint8_t> data, std::size_t chunk,
                                           bool compressed);
// Header + framed ops.
std::vector<std::uint8_t> HandUcirFile(std::span<const std::uint8_t> ops,
                                       const UcirFileSpec& spec = {});

// A small trace from UsercornWriter that uses every op and every event
// rule: a keyframe (REGs incl. an unmapped enum, SPREG, MAP+WRITE with the
// trimming quirk on a stack mapping), MEM_READ/WRITE, a syscall with
// nested MAP/WRITE/REG/PROT/UNMAP, a taken JMP, tail UNMAP, a rep iteration
// (JMP-only event), an exit syscall holding EXIT before its STEP, top-level
// NOPs. 6 instruction events then the exit marker. Chunks of `chunk` bytes
// make ops straddle them.
std::vector<std::uint8_t> SmallUsercornTrace(SnappyChunkMode mode = SnappyChunkMode::kAuto,
                                             std::size_t chunk = 37);

// A random program's trace through the recording API: `instructions`
// instructions with fall-throughs, jumps, self-loops, syscalls (some
// mapping memory), register and memory changes.
std::vector<std::uint8_t> GeneratedUsercornTrace(std::uint64_t seed, std::size_t instructions,
                                                 SnappyChunkMode mode = SnappyChunkMode::kAuto,
                                                 std::size_t chunk = 65536);

}  // namespace backstep::core::testing
