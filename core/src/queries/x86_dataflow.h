// What one x86-64 instruction does to the data the provenance chain follows
// (provenance.h): which registers it writes, and where the value it left in
// a location came from.
//
// Decoding is capstone's (detail mode): registers read and written come
// from cs_regs_access (explicit and implicit operands), mapped to the
// X86_64() table by x86_registers.h, with the architecture's extensions
// (a 32-bit register write zeroes bits 32-63, a VEX/EVEX vector write
// zeroes the rest of the zmm register). Memory operands are evaluated with
// the registers of the state before the instruction.
//
// Thread-safety: a Decoder is used by one thread at a time.
#pragma once

#include <cstdint>
#include <span>
#include <string>

#include "backstep/core/provenance.h"
#include "backstep/core/register_file.h"
#include "queries/x86_registers.h"

struct cs_insn;

namespace backstep::core::x86 {

class Decoder {
 public:
  Decoder();
  ~Decoder();
  Decoder(const Decoder&) = delete;
  Decoder& operator=(const Decoder&) = delete;

  // The instruction at the start of `bytes` (up to 15), or nullptr when
  // undecodable. Valid until the next Decode().
  const cs_insn* Decode(std::span<const std::uint8_t> bytes, Address pc);
  // Whether `insn` writes any byte of `location` (explicitly or not).
  bool WritesRegister(const cs_insn& insn, const RegisterBytes& location) const;
  // Capstone's name of a register ("eax"), for display only.
  std::string RegisterName(unsigned reg) const;

 private:
  std::size_t handle_ = 0;  // csh
  cs_insn* insn_ = nullptr;
};

// What the chain follows: a memory range or register bytes.
struct Followed {
  OriginLocation location;  // display form (register: capstone's operand name)
  RegisterBytes reg;        // when location.is_register
};

// Where the value a writer left in `current` came from: `next`, or why the
// chain ends there (`end` non-empty). `before` holds the writer's thread's
// registers before it; for a memory location, `write_start` is the address
// where the trace's recorded write (the one that covers it) starts.
struct SourceOfWrite {
  Followed next;
  std::string end;
};
SourceOfWrite SourceOf(const Decoder& decoder, const cs_insn& insn, const RegisterFile& before,
                       const Followed& current, Address write_start);

// "mov qword ptr [rip + 0x2ee5], rax".
std::string InstructionText(const cs_insn& insn);

}  // namespace backstep::core::x86
