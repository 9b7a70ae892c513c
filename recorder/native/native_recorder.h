// The record phase of `backstep record --engine native`: runs a Linux x86-64
// program natively under ptrace and logs only what the CPU cannot recompute
// (native_log.h); materialize.h turns the log into the UCIR trace an emu
// recording of the same run would be.
//
// System calls: a seccomp-bpf filter (seccomp_trap.h) makes each one a
// ptrace stop; nothing else stops the program. At the stop the registers
// are logged, the call runs (PTRACE_SYSCALL to its exit) and its result is
// logged with the memory the kernel wrote: the buffers syscall_effects.h
// knows, else a diff of all writable memory against a copy taken at entry;
// for a file mmap, the new mapping's contents (materialization maps
// anonymous memory there). rseq is refused (ENOSYS) as by the other engines.
// The common calls (read and write of files, /dev/null and /dev/zero, the
// getpid family, clock_gettime) stop nothing once their glibc site is
// patched: the system call buffer (syscall_buffer.h) makes them in the
// program and the recorder logs them from it, exactly as if traced.
//
// rdtsc/rdtscp: PR_SET_TSC makes them fault; the recorder answers with the
// host's counter (rdtscp's TSC_AUX: 0, as the emu engine) and logs it.
//
// CPUID: with CPUID faulting (the cpuid_fault CPU flag) every cpuid faults
// and PortableCpuid() answers, as the emu engine answers: exact anywhere.
// The recorder's thread then faults CPUID too while the program runs
// (CpuidFaultingForThisThread): else the kernel rewrites the CPU's setting
// (an MSR) at every switch between them, four per system call, which costs
// ~9 us each in a VM.
// Without it (many VMs) cpuid runs on the CPU: the CPU the program is
// pinned to (below; the APIC ids differ between CPUs), its signature are logged, and
// materialization answers cpuid with that CPU's values, so it must run on a
// machine with the same CPU (checked). The emulator cannot run AVX, XSAVE
// or XSAVEC, which glibc and ld.so would then pick: the program runs with
// GLIBC_TUNABLES=kHostCpuidTunables (added to the user's), which makes glibc
// take the SSE paths the portable table selects. Code outside glibc that
// reads CPUID and uses AVX is not materialized exactly (caught at the next
// system call when registers differ there). `portable_cpuid` without CPUID
// faulting is refused: the program would see the host's CPUID.
//
// vDSO: hidden at exec (vdso.h), so libc's clock functions are system calls.
//
// Signals: a fault (SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGTRAP raised by the
// kernel) is delivered at once (the emulator raises it again at the same
// instruction). A signal pending when a system call returns (raise(), one
// that interrupted it: the call's result is then -ERESTART*, which the
// delivery turns into -EINTR or a restart of the call) is delivered then,
// before any instruction, and logged with that call
// (LoggedSyscall::signal_after); a restarted call is logged again when it
// runs again. The exit stop looks for a pending signal (two
// PTRACE_PEEKSIGINFO) only after a call that failed, that could raise one
// (not CannotRaiseSignal(), signal_disposition.h), or at whose entry a
// held one was queued again: one that arrives from elsewhere while read,
// write... run is held as if it arrived just after the call returned (as
// is SIGPIPE after a pipe write that wrote part). Any other signal is held and queued again (its
// siginfo restored) at the entry of the next system call: delivered as that call returns, or at
// once if the call would wait (it then returns -ERESTART*), and logged the same way; a program that
// makes no more system calls never gets it. A signal the program discards (ignored, or SIGCHLD-like
// by default) is dropped and not logged; a call it interrupted runs again.
//
// fork, vfork, clone of a process: the parent is recorded (the log holds
// the call's result; a vfork's or CLONE_VM child's writes to the parent's
// memory come from a diff of all writable memory). The child and its
// descendants stay attached to the recorder, which only resumes them:
// the seccomp filter they inherit cannot be removed, and without a tracer
// their system calls would fail with ENOSYS. The traps they inherit
// (rdtsc's, CPUID faulting's) are answered with the CPU's values, not
// logged. The recorder returns when the program and every child have
// ended.
//
// The program and, for the record phase, the recorder's thread run on one
// CPU (the first the recorder may use; rr pins so too): each stop and
// resume is a switch between the two, never to the idle thread, which
// would rewrite the CPUID faulting setting; its children inherit that CPU.
//
// Snapshots (NativeOptions::snapshot_*): at a system call's exit stop
// (never one that a signal follows, that restarts, or rseq), the process is
// dumped (snapshot.h) into LOG.snapN and the log lists it; each interval
// between two is then materialized on its own.
//
// Refused (Unsupported; the program is killed): threads (clone with
// CLONE_THREAD; materialization re-executes one thread), execve (the
// materialization starts from the program's image at exec).
//
// Thread-safety: one recording per thread (ptrace is per-thread).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "backstep/core/expected.h"
#include "recorder/given_answers.h"
#include "recorder/native/native_log.h"
#include "recorder/tracee.h"

namespace backstep::record {

struct NativeOptions {
  SpawnOptions spawn;
  // --cpuid portable: require the portable table (CPUID faulting).
  bool portable_cpuid = false;
  // Snapshots (snapshot.h), each in LOG.snapN: at the first system call
  // stop after `snapshot_ms` milliseconds of the program's CPU time (its
  // process CPU clock: not its waits, not the recorder's stops) or
  // `snapshot_syscalls` system calls since the last one (0: not by that
  // measure; both 0: none).
  std::uint64_t snapshot_ms = 0, snapshot_syscalls = 0;
  // Inputs given instead of the kernel's and the CPU's (tests: another
  // engine's run of the program, as EmuOptions gives them): AT_RANDOM's 16
  // bytes (empty: the kernel's), successive rdtsc values (beyond the list:
  // the CPU's), getrandom's bytes, the clock reads' and sysinfo's answers,
  // reads of the random devices and the stat family's inode numbers and
  // times (given_answers.h). The log holds what the program got.
  std::vector<std::uint8_t> at_random;
  std::vector<std::uint64_t> rdtsc;
  std::vector<std::vector<std::uint8_t>> getrandom;
  std::vector<KernelAnswer> kernel_answers;
  std::vector<std::vector<std::uint8_t>> random_reads;
  std::vector<KernelAnswer> file_stats;
  // The in-process system call buffer (syscall_buffer.h): read, write and
  // the other calls it knows cost no stop (--no-syscall-buffer: off).
  bool syscall_buffer = true;
};

struct NativeResult {
  NativeLog::End end = NativeLog::End::kExited;
  int status = 0;  // exit code or signal
  std::uint64_t syscalls = 0, rdtsc = 0, held_signals = 0;
  std::uint64_t full_diffs = 0;  // system calls whose writes came from a memory diff
  std::uint64_t buffered = 0;    // of `syscalls`: made without a stop (syscall_buffer.h)
  std::uint64_t patched_sites = 0;
  std::uint64_t snapshots = 0, snapshot_bytes = 0;  // their files' total size
  NativeLog::Cpuid cpuid = NativeLog::Cpuid::kPortable;
};

// What the program gets in GLIBC_TUNABLES without CPUID faulting.
inline constexpr char kHostCpuidTunables[] =
    "glibc.cpu.hwcaps=-OSXSAVE,-XSAVE,-XSAVEC,-ERMS,-AVX,-AVX2,-AVX_Fast_Unaligned_Load,-FMA";

// Whether this machine can make cpuid fault (arch_prctl(ARCH_SET_CPUID)).
bool CpuidFaultingAvailable();

// For its lifetime, the process environment (which the programs recorded
// and materialized inherit) holds GLIBC_TUNABLES as the native engine gives
// it to the program (`cpuid`: the log's mode); restored after. Not
// thread-safe: the environment is the process's.
class ProgramEnvironment {
 public:
  explicit ProgramEnvironment(NativeLog::Cpuid cpuid);
  ~ProgramEnvironment();
  ProgramEnvironment(const ProgramEnvironment&) = delete;
  ProgramEnvironment& operator=(const ProgramEnvironment&) = delete;

 private:
  bool changed_ = false, had_ = false;
  std::string saved_;
};

// Records the program and writes the log to `log_path` (atomically). When
// the program does something refused, the error says what; no log is
// written.
core::Expected<NativeResult> RecordNative(const NativeOptions& options,
                                          const std::string& log_path);

}  // namespace backstep::record
