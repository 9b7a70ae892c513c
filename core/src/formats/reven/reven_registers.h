// The mapping between REVEN's registers and backstep's X86_64() table, both
// ways (docs/formats/reven.md, "Registers").
//
// REVEN ids differ per producer, so registers are resolved by *name*, once,
// when a trace is opened; the table's aliases already cover most REVEN names
// (x87r0 -> fpr0, msr_c0000100 -> fs_base, x87lastip -> fioff, ...). A few
// registers need a conversion, kept in one small table in the .cc:
//   selectors cs..gs (2 bytes -> 4), x87control/x87opcode (2 -> 4),
//   x87lastip/x87lastdp (8 -> 4, low bytes)          kResize
//   zmmN (64 bytes) -> xmmN, ymmNh, zmmNh            kZmm
//   PANDA (declares `top`): x87tags valid mask       kTagMask
//                           x87status without TOP    kStatusNoTop
//                           top                      kTop
//   Bochs: x87status (with TOP), x87tags (tag word)  kResize
// Unknown names are kUnmapped: their values are ignored, never an error.
//
// Rejected alternative: converting PANDA's x87 state with reader-side state
// (remembering TOP). Readers are stateless (trace_reader.h), so the status
// and TOP become AND/OR operations on fstat that compose in any order.
//
// Thread-safety: pure functions; the tables are immutable.
#pragma once

#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "backstep/core/register_file.h"

namespace backstep::core {

enum class RevenConversion : std::uint8_t {
  kUnmapped,     // no canonical register: values ignored
  kDirect,       // same register, same size: copied; operations allowed
  kResize,       // same register, other size: low bytes, zero-extended
  kZmm,          // zmmN -> xmmN (bytes 0-15), ymmNh (16-31), zmmNh (32-63)
  kTagMask,      // PANDA x87tags: valid mask -> ftag word (valid 00, empty 11)
  kStatusNoTop,  // PANDA x87status: fstat = (fstat & 0x3800) | (v & ~0x3800)
  kTop,          // PANDA top: fstat = (fstat & ~0x3800) | (top & 7) << 11
};

struct RevenRegisterMapping {
  RevenConversion conversion = RevenConversion::kUnmapped;
  RegisterId target[3] = {kNoRegister, kNoRegister, kNoRegister};
  std::uint16_t copy_size = 0;  // kDirect/kResize: bytes copied from the REVEN value
};

// Resolves a REVEN register declared as `name` with `size` bytes. `panda_x87`
// is true when the machine declares a `top` register (PANDA's x87 layout).
RevenRegisterMapping MapRevenRegister(std::string_view name, std::uint16_t size, bool panda_x87);

// True if an ADD/AND/OR operation may target a register with this mapping:
// kDirect (the operand then has the canonical size), or kUnmapped (the
// operation is ignored like every value of that register).
inline bool RevenOperationAllowed(const RevenRegisterMapping& m) {
  return m.conversion == RevenConversion::kDirect || m.conversion == RevenConversion::kUnmapped;
}

// Appends to *out the canonical writes of a REVEN register value (its
// declared size in bytes). kUnmapped appends nothing. The writes of
// kStatusNoTop/kTop are operations: the consumer's fstat must be known.
void AppendRevenValueSlow(const RevenRegisterMapping& m, std::span<const std::uint8_t> value,
                          std::vector<RegisterWrite>* out);
inline void AppendRevenValue(const RevenRegisterMapping& m, std::span<const std::uint8_t> value,
                             std::vector<RegisterWrite>* out) {
  if (m.conversion == RevenConversion::kDirect) {  // the hot path: most registers
    RegisterWrite& w = out->emplace_back();
    w.reg = m.target[0];
    std::memcpy(w.value, value.data(), m.copy_size);
    return;
  }
  AppendRevenValueSlow(m, value, out);
}

// --- writer direction ---

// One register a converted trace declares: Bochs-style names (x87status
// holds TOP, x87tags is the full tag word, no `top`), zmmN for the three
// vector pieces, REVEN names where the table has an alias, canonical names
// otherwise. Mapping it back with MapRevenRegister(name, size, false) gives
// `mapping`.
struct RevenExportRegister {
  std::string name;
  std::uint16_t size = 0;
  RevenRegisterMapping mapping;
};

// Every storage register of X86_64(), as a converted trace declares them.
const std::vector<RevenExportRegister>& RevenExportRegisters();

// Writes the REVEN value of `reg` (reg.size bytes) from `file` into `out`.
void EncodeRevenValue(const RevenExportRegister& reg, const RegisterFile& file, std::uint8_t* out);

}  // namespace backstep::core
