// x64dbg fixtures for tests, fuzz seeds and the end-to-end tool: a
// hand-made two-thread x86-64 program (real instruction bytes, simulated
// semantics) as a FakeTrace in exactly the event model X64dbgReader
// produces (docs/formats/x64dbg.md), and writing it with
// X64dbgTraceWriter.
//
// The program (addresses fixed, see the constants; with `i386`, the same in
// 32-bit code: mov eax, [0x404000] / ... / jnz):
//   thread A (tid 0x1a4) at 0x401000:        thread B (tid 0x2b8) at 0x402000:
//     mov rax, [rip+counter]                   mov rbx, [rip+counter]
//     add rax, 1                               mov [rsp], rbx
//     mov [rip+counter], rax                   dec rdx
//     push rax                                 jnz 0x402000
//     pop rax
//     push rax   (the slot already holds rax: x64dbg's "unchanged" bit)
//     pop rax
//     dec rcx
//     jnz 0x401000
// The threads alternate in runs of 1..12 instructions (seeded). Before
// block `reveal_at` only rax rbx rcx rdx rsp rip eflags are known; from
// there on every register the REGDUMP holds (the writer's first full dump
// is block 512 when reveal_at <= 512). Positions are blocks (x64dbg's
// numbering); at a thread switch the outgoing thread's event sets its
// registers at its next block (a suspended thread's do not change); after
// the last block the registers it does not list stay known, or none when
// the file ends after a switch (`end_with_switch`).
//
// Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "backstep/core/status.h"
#include "backstep/testing/fake_trace.h"

namespace backstep::core::testing {

inline constexpr Address kX64dbgCodeA = 0x401000;
inline constexpr Address kX64dbgCodeB = 0x402000;
inline constexpr Address kX64dbgCounter = 0x404000;
inline constexpr Address kX64dbgStackA = 0x7ff000;  // rsp of A
inline constexpr Address kX64dbgStackB = 0x6ff000;  // rsp of B
inline constexpr std::uint64_t kX64dbgThreadA = 0x1a4;
inline constexpr std::uint64_t kX64dbgThreadB = 0x2b8;
inline constexpr std::uint32_t kX64dbgLastErrorA = 2;  // ERROR_FILE_NOT_FOUND

struct X64dbgProgramOptions {
  std::uint64_t instructions = 1500;
  std::uint64_t reveal_at = 512;
  std::uint64_t seed = 1;
  bool two_threads = true;
  bool i386 = false;  // a .trace32: the same program in 32-bit code
  std::uint64_t thread_a = kX64dbgThreadA, thread_b = kX64dbgThreadB;
  // The file ends with a block of bit 7: x64dbg stopped recording right
  // after a thread switch (its pending instruction is dropped).
  bool end_with_switch = false;
};

// The program's trace in the reader's event model; its image holds the
// counter and both stacks.
FakeTrace MakeX64dbgProgram(const X64dbgProgramOptions& options = {});

// Writes `trace` with X64dbgTraceWriter (Begin, Append per event, Finish);
// the architecture is the initial registers'.
Status WriteX64dbgTrace(const FakeTrace& trace, const std::string& path);

// Writes the program's file, laid out as x64dbg writes it (with
// `end_with_switch`, one more instruction written then dropped, as x64dbg
// does when the recording stops); MakeX64dbgProgram(options) is what it
// reads as.
Status WriteX64dbgProgram(const X64dbgProgramOptions& options, const std::string& path);

// The file bytes of a program written to a temporary file.
Expected<std::vector<std::uint8_t>> X64dbgProgramBytes(const X64dbgProgramOptions& options = {});

}  // namespace backstep::core::testing
