// A small i386 ("x86") usercorn trace with two threads, recorded reads and
// partial state, written with UsercornWriter for the stub's thread, rwatch
// and <unavailable> tests (gdbstub tests, tests/e2e/test_threads_reads.py
// through tests/tools/make_threads_trace.cc).
//
// The program (real i386 code in the image, so `x/i $pc` disassembles it):
//   thread 1 (pid 0) at code:      mov eax,[counter]; add eax,1;
//                                  mov [counter],eax; jmp code   (loop)
//   thread 2 (pid 1) at code+0x100: mov eax,0x77; mov esp,stack2;
//                                  mov dword [flag],0xdeadbeef;
//                                  mov eax,[counter]
// Thread 1 runs whole loop iterations, thread 2 one instruction at a time in
// between (each switch is a FRAME with a JMP: an event of its own).
// Partial state: eflags, selectors and the x87/SSE registers are never
// recorded (unknown); thread 2's registers are unknown until it sets them
// (eax, esp); memory is known inside the three mappings only (`data` is 0x100
// bytes: [data + 0x100, ...) is unknown).
//
// Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "backstep/core/expected.h"
#include "backstep/core/types.h"

namespace backstep::core::testing {

struct I386ThreadsFacts {
  Address code = 0x08048000;
  Address data = 0x0804a000;  // mapping of 0x100 bytes
  Address counter = 0x0804a000;
  Address flag = 0x0804a010;
  std::uint32_t counter_initial = 5;
  std::uint32_t flag_value = 0xdeadbeef;
  std::uint32_t thread2_eax = 0x77;
  Address stack1 = 0xbfff0000, stack2 = 0xbffe0000;  // 0x1000 bytes each
  std::uint32_t thread2_esp = 0xbffe0ff0;
  std::uint32_t iterations = 0;  // of thread 1's loop
  std::uint64_t events = 0;      // as the reader decodes them
  // Positions (state indices) right after these events: the write of flag
  // (thread 2), thread 2's read of counter, thread 1's first read of counter.
  std::uint64_t flag_write_event = 0, thread2_read_event = 0, first_read_event = 0;
};

// Writes the trace to `path` (or, with an empty path, to *bytes).
Expected<I386ThreadsFacts> WriteI386ThreadsTrace(const std::string& path,
                                                 std::vector<std::uint8_t>* bytes = nullptr);

}  // namespace backstep::core::testing
