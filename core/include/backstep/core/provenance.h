// Provenance: where did these bytes come from?
//
// Origin(trace, address, length, at, depth) follows a value backwards: the
// last write to [address, address+length) before `at` (the memory index),
// the instruction that wrote it (decoded with capstone at that position),
// the register or memory that instruction copied the value from (its source
// operand, evaluated with the registers before the write), the writer of
// *that* location, and so on for at most `depth` steps.
//
// The writer of a register is the last instruction of the thread that
// writes it by its semantics, whatever value it wrote: recordings store a
// register only when its value changes, so a load of the value the register
// already held leaves no trace of its own; the chain decodes the thread's
// instructions (registers written explicitly or implicitly, 32-bit writes
// zero-extending, VEX writes zeroing the upper vector bits) and also takes
// any event whose recorded register writes name it (system calls, signals).
// Where the trace records an event's reads, a memory source the decoding
// computes must be among them, else the chain ends saying so.
//
// Each OriginStep is one location and the event that gave it its value:
//   location  memory (address, length) or a register (capstone's name of
//             the operand: "eax", "xmm1", "rdi");
//   position  the writing event w (the state before it); the value is the
//             location's content in state w + 1;
//   pc, instruction  the writer's pc and its disassembly (Intel syntax);
//   end       "" when the chain continues with the next step, else why it
//             stops (below).
// The chain follows data *movement*: mov and its kin (movzx/movsx, SSE/AVX
// moves, cmov, xchg), push and pop, lods, movs and stos (rep or not). Every
// chain ends with a reason: "immediate 0x2a", "computed by add", "return
// address of call", "written by syscall" (non-instruction events),
// "initial image" (no write before: the value was in the initial state),
// "zero fill of a mapping made during the run" (no write since a mapping
// the trace did not zero-fill was made: backstep/core/mappings.h; also
// when such a mapping was made over the bytes after their last write, the
// step's position then the mapping's event), "unmapped" (a byte of the
// location is unmapped at the step's position: its last write no longer
// holds),
// "initial registers", "not found within N events" (register scan bound,
// register_queries.h), "registers cleared" (tfile frame), "undecodable
// instruction", "pc unknown", "extension by movzx" (the bytes a zero/sign
// extension made), "zero-extended by mov" (upper bytes a 32-bit or VEX
// write zeroed), "register st0 (not recorded)", "source address unknown
// (...)", "recorded write at A is not this instruction's destination B",
// "decoded source mem A+n not among the event's recorded reads", "depth".
// When the write covers only part of the asked bytes, the chain follows
// the part it covers (the step's location is narrowed to it).
//
// Limits: memory writes come from the trace's record; a store the recorder
// could not confirm as a write and that left the bytes unchanged (a vector
// store of the value already there) is not recorded, so the chain names
// the earlier writer of the same value.
//
// Costs: per memory step one LastWrite (O(log n) per page); per register
// step a forward walk of the keyframe intervals back to the writer (a
// cursor step per event, a 15-byte read and a decode per distinct pc per
// interval), bounded like LastRegisterWrite; per step one cursor seek and
// a 15-byte read to decode the instruction.
//
// Thread-safety: reentrant; `interrupt` may be set from another thread.
#pragma once

#include <atomic>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "backstep/core/expected.h"
#include "backstep/core/types.h"

namespace backstep::core {

class Trace;

struct OriginLocation {
  bool is_register = false;
  std::string reg;      // register (capstone's operand name)
  Address address = 0;  // memory
  std::uint64_t length = 0;
  // "rax", "mem 0x7ffd1230+8".
  std::string ToString() const;
};

struct OriginStep {
  OriginLocation location;
  std::optional<Position> position;  // the writer (the mapping at a zero fill made over
                                     // older bytes); nullopt at "initial image"
  std::optional<Address> pc;
  ThreadId thread;
  std::string instruction;  // "mov qword ptr [rip + 0x2ee5], rax", or ""
  std::vector<std::uint8_t> value, known;
  std::string end;  // "" if the next step continues the chain
};

inline constexpr unsigned kDefaultOriginDepth = 8;

// The provenance chain of [address, address+length) (virtual) in state `at`.
// Errors: OutOfRange for `at` past the end, InvalidArgument for an empty
// range or one longer than 4096 bytes, Unsupported for a non-x86-64 trace,
// errors of the trace's reader and of the memory queries; Interrupted.
Expected<std::vector<OriginStep>> Origin(const Trace& trace, Address address, std::uint64_t length,
                                         Position at, unsigned depth = kDefaultOriginDepth,
                                         const std::atomic<bool>* interrupt = nullptr);

// One line per step: "#0 pos 1234 pc 0x401136 mem 0x4c6f30+8 = 88 77 ... <- mov ..."
// followed by the end reason; what `monitor origin` and `backstep origin` print.
std::string FormatOrigin(const std::vector<OriginStep>& steps);

}  // namespace backstep::core
