// Fixed RegisterIds of the X86_64() table that the arch module itself needs
// (the derivation of st0..st7), checked against the table by the tests.
//
// Other modules resolve registers with X86_64().Find() once, at open time;
// these constants exist only because RegisterFile::Read must derive st(i)
// without a name lookup on every call.
//
// Thread-safety: constants.
#pragma once

#include "backstep/core/arch.h"

namespace backstep::core::x86_64_ids {

// gdb registers: RegisterId == gdb regnum for 0..148.
inline constexpr RegisterId kRip = 16;
inline constexpr RegisterId kEflags = 17;
inline constexpr RegisterId kSt0 = 24;  // st0..st7 = 24..31 (derived)
inline constexpr RegisterId kFctrl = 32;
inline constexpr RegisterId kFstat = 33;
inline constexpr RegisterId kPkru = 148;
// First system register: fpr0..fpr7 (physical x87 R0..R7).
inline constexpr RegisterId kFpr0 = 149;

}  // namespace backstep::core::x86_64_ids
