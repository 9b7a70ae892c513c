// Recorder: records a Linux x86-64 program by single-stepping it with
// ptrace, into a RecordingSink.
//
// Record() spawns the program (tracee.h), stops before its first
// instruction, hands the sink the initial image, then per step:
//   1. decodes the instruction at rip (insn_decoder.h, cached);
//   2. single-steps it;
//   3. sends the registers it changed (GPRs always; x87/SSE/AVX when it is
//      an FP/SIMD instruction or a syscall) and the contents of the ranges
//      it wrote;
//   4. after `syscall`: the kernel's writes (known buffers, else a diff of
//      all writable memory) and, for mmap/munmap/mprotect/brk/mremap, the
//      mapping changes with the new mappings' contents.
// Every `check_interval` steps (and at the end) a diff of all writable
// memory and of the FP state checks that nothing was missed; anything found
// is recorded (late) and counted in RecordResult::missed_*.
//
// Nondeterminism and artefacts: rdtsc/rdtscp fault (PR_TSC_SIGSEGV) and are
// emulated with the host's counter; rseq registration fails with ENOSYS
// (the kernel would otherwise write the rseq area behind the trace's back);
// r11 after `syscall` and the flags `pushf` stores lose the TF bit that
// single-stepping sets; eflags loses RF.
//
// Threads (clone with CLONE_THREAD) are recorded one at a time, in a
// deterministic round robin (a turn ends after kTimeSlice instructions or
// when the thread exits); a system call that may block (futex waits, reads,
// sleeps, ...) runs while the other threads are stepped and is recorded
// when it returns. Each thread has its own frames in the sink
// (OnThreadSwitch/OnThreadStart).
//
// Reads (RecordOptions::reads): the decoded load operands of every
// instruction (InsnDecoder::Reads).
//
// Signals the program handles are delivered by the kernel (a step with the
// signal) and recorded as an event of their own (SignalRecord): the frame
// written on the stack (a diff of writable memory), every register the
// delivery changed, the handler's address; rt_sigreturn is an ordinary
// system call. The frame's saved rflags lose the TF of single-stepping.
//
// fork, vfork and clone without CLONE_THREAD: RecordOptions::follow; the
// other process is detached after what the recorder set up in it (rdtsc and
// CPUID faulting, the single-step flag) is undone (untraced.h), so that it
// and the programs it execs run as without the recorder. Following the
// child continues the same trace: the child's memory and registers are the
// parent's, the system call returns 0.
//
// execve: the recording goes on in the new image (RecordingSink::OnExec,
// ptrace_exec.cc); CPUID faulting, which exec clears, is set up again.
//
// Refused (Unsupported, the trace ends before the instruction): execve in
// a multi-threaded program, int3, the main thread's exit while others
// run, following a child of a multi-threaded program, a signal arriving
// during another signal's delivery.
// Signals it does not handle are recorded as a delivery without effects
// (SignalRecord with no registers nor writes), then delivered (ignored ones
// vanish, fatal ones end the program: RecordingSink::OnKilled). A stop
// signal whose default action would stop the process (SIGSTOP, or an
// unhandled SIGTSTP/SIGTTIN/SIGTTOU) is dropped: the process goes on, and
// stderr says so.
//
// The engine: ptrace/ptrace_session.h; what it shares with the emu engine:
// docs/architecture.md ("The recorder's engines and what they share").
//
// Thread-safety: one recording per thread (ptrace is per-thread).
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "backstep/core/expected.h"
#include "recorder/recording_sink.h"
#include "recorder/tracee.h"

namespace backstep::record {

struct RecordOptions {
  SpawnOptions spawn;
  std::optional<std::uint64_t> max_instructions;
  // Called about every 4096 instructions with the count so far; returning
  // false stops the recording (Ctrl-C).
  std::function<bool(std::uint64_t instructions)> progress;
  std::uint64_t check_interval = 1u << 20;  // full diffs; 0: only at the end
  // fork, vfork and clone without CLONE_THREAD: keep recording the parent
  // (the child runs untraced) or the child (the parent runs untraced).
  enum class Follow { kParent, kChild } follow = Follow::kParent;
  // Record each instruction's reads (insn_decoder.h: InsnDecoder::Reads).
  bool reads = true;
  // Give the reads' contents (read from the tracee and the trace's view of
  // writable memory: one more memory read per instruction); else zeros.
  bool read_values = false;
  // --cpuid portable: the program sees PortableCpuid() (cpuid.h) instead of
  // the host's CPUID: through CPUID faulting where the CPU has it, otherwise
  // by answering each cpuid the single-stepper is about to execute.
  bool portable_cpuid = false;
  // --no-vdso: the program does not see the vDSO (vdso.h), its clock
  // functions make system calls (implied by the emu engine; set it with the
  // ptrace engine to record the same instructions as the emu engine).
  bool hide_vdso = false;
};

struct RecordResult {
  std::uint64_t instructions = 0;
  std::uint64_t syscalls = 0;
  enum class End { kExited, kKilled, kMaxInstructions, kInterrupted } end = End::kExited;
  int exit_code = 0;                   // kExited
  int signal = 0;                      // kKilled
  std::uint64_t missed_bytes = 0;      // found by the periodic checks
  std::uint64_t missed_registers = 0;  // FP registers the decoder did not announce
  std::uint64_t full_diffs = 0;        // syscalls and instructions without known writes
  std::uint64_t signals = 0;           // handled signals delivered (and recorded)
  // Steps of instructions no decoder knows: their writes come from a diff
  // of memory, their reads are not recorded.
  std::uint64_t undecodable = 0;
  // Steps of decoded instructions whose reads the decoder cannot bound (a
  // VSIB form other than the gathers): not in the trace either.
  std::uint64_t unbounded_reads = 0;
};

// Records until the program exits, max_instructions or progress says stop.
// The sink is finished in every case where OnStart succeeded (the trace is
// then complete up to the last recorded instruction), even when an error
// (Unsupported for refused features, IOError for ptrace failures) is
// returned.
core::Expected<RecordResult> Record(const RecordOptions& options, RecordingSink& sink);

}  // namespace backstep::record
