// RevenMachine: the machine description section of a trace.bin, as declared
// by its producer (docs/formats/reven.md §1.2).
//
// Byte layout of the payload:
//   u32 arch magic ('x641' | 'arm1') ; u8 PHY_SIZE (1..8)
//   u32 n ; n x { start[PHY_SIZE] ; size[PHY_SIZE] }                  regions
//   u32 n ; n x { u16 id ; u16 size ; u8 name_len ; name }             registers
//   u32 n ; n x { u8 op_id ; u16 reg_id ; u8 operator ; operand[size] } operations
//   u32 n ; n x { u8 name_len ; name ; u8 value_len ; value }          static registers
//
// The same struct describes what RevenWriter writes. Parsing validates
// everything the format itself requires (unique ids and names, operation id
// != 0xff and distinct from register ids, operation targets declared,
// operators 0..3, regions that neither overflow nor overlap); what backstep
// can map is decided later (reven_registers.h).
//
// Thread-safety: a value type.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "backstep/core/expected.h"
#include "formats/reven/reven_format.h"
#include "util/byte_reader.h"

namespace backstep::core {

struct RevenRegion {
  std::uint64_t start = 0;
  std::uint64_t size = 0;
};

struct RevenRegisterDecl {
  std::uint16_t id = 0;
  std::uint16_t size = 0;
  std::string name;
};

struct RevenOperationDecl {
  std::uint8_t id = 0;
  std::uint16_t reg = 0;              // target register id
  std::uint8_t op = 0;                // RegisterOp value: 0 SET, 1 ADD, 2 AND, 3 OR
  std::vector<std::uint8_t> operand;  // the target's size
  std::uint64_t file_offset = 0;      // where it was parsed (for messages)
};

struct RevenMachine {
  std::uint32_t arch_magic = kRevenArchX64V1;
  std::uint8_t phy_size = 8;
  std::vector<RevenRegion> regions;
  std::vector<RevenRegisterDecl> registers;
  std::vector<RevenOperationDecl> operations;
  std::vector<std::pair<std::string, std::string>> static_registers;  // name, raw value bytes

  // Σ region sizes (the initial memory section's size). REQUIRES: the
  // regions were validated (no overflow).
  std::uint64_t TotalMemory() const;
};

// Parses and validates a machine description payload. `file` and the
// reader's offsets name errors. Fails fast, without allocating, on counts
// the payload cannot hold.
Expected<RevenMachine> ParseRevenMachine(ByteReader payload, const std::string& file);

// Appends the payload encoding of `m`, without validating it (tests write
// invalid machines on purpose). InvalidArgument only when a value cannot be
// encoded (a name over 255 bytes, a region value wider than PHY_SIZE).
Status AppendRevenMachine(const RevenMachine& m, std::vector<std::uint8_t>* out);

}  // namespace backstep::core
