// Byte-level constants of x64dbg trace files (`.trace64`, `.trace32`);
// docs/formats/x64dbg.md (§5: the layout) has the details.
//
// Thread-safety: constants.
#pragma once

#include <cstdint>
#include <span>

namespace backstep::core {

inline constexpr std::uint8_t kX64dbgMagic[4] = {'T', 'R', 'A', 'C'};
// x64dbg's own reader rejects longer headers.
inline constexpr std::uint32_t kX64dbgMaxJsonSize = 16384;
inline constexpr std::uint8_t kX64dbgBlockInstruction = 0;
// Block flags byte.
inline constexpr std::uint8_t kX64dbgFlagThreadId = 0x80;
inline constexpr std::uint8_t kX64dbgFlagReserved = 0x70;
inline constexpr std::uint8_t kX64dbgOpcodeMask = 0x0f;
// Memory entry flags byte: bit 0 = the value did not change (no new value).
inline constexpr std::uint8_t kX64dbgMemUnchanged = 0x01;
// x64dbg writes a full register dump on these block numbers of a session.
inline constexpr std::uint64_t kX64dbgFullDumpEvery = 512;
// How far (in blocks) the reader looks for a thread's next block, whose
// stored registers are that thread's state after a thread switch.
inline constexpr std::uint64_t kX64dbgLookahead = 65536;

// PUSH, PUSHF and CALL (docs/formats/x64dbg.md §5.4): x64dbg forces their last memory
// entry onto the new stack slot, keeping an old value read elsewhere; the
// reader and the writer both apply that rule to an opcode's bytes.
bool X64dbgIsPushOrCall(std::span<const std::uint8_t> op, bool is64);

}  // namespace backstep::core
