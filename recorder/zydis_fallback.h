// ZydisFallback: decodes, for InsnDecoder, the instructions capstone 4
// cannot: the AVX-512 (EVEX) forms glibc's *_evex string functions use on
// CPUs that have them (kmovd, vpcmpeqb/vptestmb into a mask register,
// masked vmovdqu8 ...), with Zydis (libzydis, which knows every EVEX form).
//
// It fills the Decoded fields the capstone path fills for such code: the
// size, fp, and the explicit memory operands read and written, from Zydis's
// operand actions (a conditional write, or any masked store, is a *maybe*
// write: only the bytes that changed are recorded). A gather's VSIB operand
// gives Decoded::gather (its lanes, index and mask registers); a scatter's
// sets unknown_writes (the recorder diffs memory), any other VSIB read
// unknown_reads. InsnDecoder also sends capstone's AVX2 gathers here.
// Register numbers are capstone's x86_reg (Decoded::MemOperand's contract).
//
// Thread-safety: one thread at a time per object.
#pragma once

#include <cstdint>
#include <span>

#include "recorder/insn_decoder.h"

namespace backstep::record {

// False when Zydis cannot decode `bytes` either (`d` is then untouched).
bool DecodeWithZydis(core::Address pc, std::span<const std::uint8_t> bytes, Decoded* d);

}  // namespace backstep::record
