// The emulation engine of `backstep record --engine emu`: records a Linux
// x86-64 program by running it in Unicorn (QEMU's TCG) with per-instruction
// hooks, 20-50 times faster than single-stepping it with ptrace, into the
// same RecordingSink (recording_sink.h) and so the same UCIR.
//
// No ELF loader: the program is started exactly as the ptrace engine starts
// it (tracee.h: exec, stopped before its first instruction, ASLR off) and
// its whole image and registers are copied into Unicorn, so the initial
// stack, auxv and vdso are the kernel's. The stopped tracee then serves as
// the kernel: at each `syscall` the pages the emulator dirtied since the
// last one are written into it, its registers set to the emulator's, the
// one instruction single-stepped there, and the kernel's side effects
// (known output buffers, else a diff of writable memory; mapping changes
// from /proc/PID/maps) copied back into Unicorn and sent to the sink as the
// ptrace engine sends them.
//
// Per instruction: UC_HOOK_CODE gives pc and size; UC_HOOK_MEM_WRITE the
// writes (address, size, value); the GPRs and flags are read in one batch
// and diffed; x87/SSE state only after instructions that touch it (capstone,
// insn_decoder.h) and at system calls.
//
// Where TCG and the CPU disagree, the CPU runs the instruction and the trace
// takes its results, so that recordings equal the ptrace engine's:
// undefined flags (mul, imul, shifts, bsf, bt...: native_flags.h in the
// recorder for register-only forms, else a step of the tracee), SSE
// arithmetic (MXCSR exception flags, which TCG does not set) and rep string
// instructions (the CPU single-steps them in chunks of iterations, QEMU one
// at a time) in the tracee, after the dirty pages are pushed into it.
//
// Determinism: CPUID answers from PortableCpuid() (cpuid.h: no AVX, which
// TCG lacks), so recordings equal the ptrace engine's with --cpuid
// portable; rdtsc/rdtscp return a counter (instructions retired * 16).
// rseq fails with ENOSYS, as in the ptrace engine.
//
// The vDSO is hidden from the program (vdso.h: RecordOptions::hide_vdso is
// implied): its clock functions are system calls the tracee runs.
//
// Signals: a fault of an instruction (in the emulator, or of one run on the
// CPU) is raised again in the tracee and the kernel delivers it; the
// delivery is recorded as the ptrace engine records it. fork/vfork and a
// clone of a process record the parent; the child runs untraced.
//
// Refused (Unsupported; the trace ends before the instruction, the sink is
// finished): int3/int n and other CPU exceptions the tracee does not raise,
// threads (clone of a thread), execve, following the child of a fork, a
// signal that arrives during a system call, a read of the [vvar] page (only
// through the vDSO's code, which nothing calls). The stack grows down as the
// kernel grows it (GrowStack: the tracee touches the page, Unicorn maps it).
//
// The engine: emu_session.h, one class over a file per part.
//
// Thread-safety: one recording per thread (ptrace is per-thread).
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "backstep/core/expected.h"
#include "recorder/cpuid.h"
#include "recorder/emu/syscall_source.h"
#include "recorder/given_answers.h"
#include "recorder/recorder.h"
#include "recorder/recording_sink.h"
#include "recorder/tracee.h"

namespace backstep::record {

struct EmuOptions {
  // 16 bytes to put at AT_RANDOM before the first instruction (tests: the
  // same stack canary and pointer guard as another recording); empty: the
  // kernel's.
  std::vector<std::uint8_t> at_random;
  // The bytes successive getrandom calls return (tests: the other
  // recording's); beyond the list, the kernel's.
  std::vector<std::vector<std::uint8_t>> getrandom;
  // The values successive rdtsc/rdtscp return (edx:eax); beyond the list, the counter.
  std::vector<std::uint64_t> rdtsc;
  // What successive system calls whose answer differs from run to run
  // returned (tests: the other recording's): the clock reads
  // (clock_gettime, gettimeofday, time) and sysinfo (uptime, free memory).
  // Each: the system call's number, its result and the bytes the kernel
  // wrote at its output pointer. A call of another number than the next one
  // listed, or beyond the list, is the kernel's.
  using KernelAnswer = record::KernelAnswer;
  std::vector<KernelAnswer> kernel_answers;
  // The bytes successive reads from /dev/random or /dev/urandom returned
  // (tests: the other recording's; perl seeds its hashes from them); beyond
  // the list, the kernel's.
  std::vector<std::vector<std::uint8_t>> random_reads;
  // What successive stat, fstat, lstat and newfstatat calls that succeeded
  // wrote (the 144-byte struct stat; tests: the other recording's), of which
  // only the inode number and the access, modification and change times are
  // given: they differ between two runs for a file a run creates or writes
  // (a compiler's temporary file, a make rule's target, /tmp). A call of
  // another number than the next one listed, or beyond the list, keeps the
  // kernel's.
  std::vector<KernelAnswer> file_stats;
  // Signals the other recording got without effect (ignored: a SIGCHLD
  // without a handler when an untraced child exits, at whatever instruction
  // the parent was then), each recorded here as the same delivery without
  // effect before the instruction that follows the first `after`
  // instructions. Such signals arriving while this run's program is in a
  // system call are dropped as always (not recorded).
  struct QuietSignal {
    std::uint64_t after = 0;
    int signal = 0;
    std::vector<std::uint8_t> siginfo;
  };
  std::vector<QuietSignal> quiet_signals;
  // Hooks for materializing native recordings (recorder/native/): who
  // answers system calls (null: the tracee runs them) and cpuid (empty:
  // PortableCpuid()).
  SyscallSource* syscalls = nullptr;
  std::function<CpuidResult(std::uint32_t leaf, std::uint32_t subleaf)> cpuid;
  // Set: called on the tracee stopped at exec, before the engine reads its
  // state, to make it another state of the program (a snapshot of a native
  // recording); the recording starts there (the vDSO is not hidden again,
  // at_random is not placed).
  std::function<core::Status(Tracee&)> restore;
  // Set: renames the tracee's mappings wherever the engine reads them
  // (AddressSpace::SetRename), before they are compared or recorded: the
  // files a native recording mapped, which materialization maps as
  // anonymous memory (recorder/native/mapping_names.h).
  std::function<void(std::vector<Mapping>*)> name_mappings;
};

// False when backstep was built without Unicorn (libunicorn-dev).
bool EmulatorAvailable();

// Like Record() (recorder.h), with the emulation engine. options.portable_cpuid
// is implied; check_interval is unused (the emulator sees every write).
core::Expected<RecordResult> RecordEmulated(const RecordOptions& options, RecordingSink& sink,
                                            const EmuOptions& emu = {});

}  // namespace backstep::record
