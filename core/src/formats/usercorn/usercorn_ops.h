// Decoding of single UCIR ops from the decompressed stream (docs/formats/usercorn.md
// §2.2, usercorn_format.h for the byte layout).
//
// ReadUcirOp() reads one op's type byte and fields. For FRAME, KEYFRAME and
// SYSCALL it reads only the header: the nested ops follow in the stream and
// the caller reads them one by one (so that nesting rules and positions stay
// with the caller). Variable-length data (MEM_WRITE bytes, SPREG value) is
// appended to a caller-owned arena, chunk by chunk: a length field promising
// more data than the file holds costs no allocation beyond what exists.
//
// Errors: OutOfRange when the data ends inside the op (the caller decides
// whether that is a truncated trace), Corruption for an unknown op type,
// Unsupported when the arena would exceed its limit. Messages name the
// stream position of the op.
//
// Thread-safety: functions of their arguments.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "backstep/core/status.h"
#include "formats/usercorn/snappy_stream.h"

namespace backstep::core {

// The fields of one op; which are set depends on `type`.
struct UcirOpFields {
  std::uint8_t type = 0;
  std::uint64_t addr = 0;   // JMP, MEM_READ, MEM_WRITE, MEM_MAP/UNMAP/PROT
  std::uint64_t size = 0;   // JMP block size, STEP, MEM_READ, MAP/UNMAP/PROT, data length
  std::uint64_t pid = 0;    // FRAME, KEYFRAME
  std::uint32_t count = 0;  // nested ops of FRAME, KEYFRAME, SYSCALL
  std::uint16_t reg = 0;    // REG, SPREG (Unicorn enum)
  std::uint64_t value = 0;  // REG value; SYSCALL return value
  std::uint32_t num = 0;    // SYSCALL number
  std::uint8_t prot = 0;    // MEM_MAP, MEM_PROT
  std::uint64_t file_offset = 0, file_length = 0;  // MEM_MAP
  std::string desc, file;                          // MEM_MAP
  std::vector<std::uint64_t> args;                 // SYSCALL
  std::size_t data = 0;  // MEM_WRITE, SPREG: offset of the bytes in the arena
};

// "REG", "MEM_WRITE", ... ("op 0x2a" for unknown types).
std::string UcirOpName(std::uint8_t type);

// Reads the op at the stream's position (see above). `arena_limit` caps
// arena->size().
Status ReadUcirOp(SnappyStream& in, UcirOpFields* op, std::vector<std::uint8_t>* arena,
                  std::uint64_t arena_limit);

// "r-x" for MEM_MAP/MEM_PROT protection bits.
std::string UcirProtString(std::uint8_t prot);

}  // namespace backstep::core
