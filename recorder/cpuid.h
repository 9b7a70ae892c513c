// Portable CPUID: one deterministic CPUID table that both recording engines
// show the program, so that the ptrace engine (on the real CPU) and the
// emulation engine (Unicorn's TCG, which has no AVX) see the same CPU and
// glibc picks the same code paths in both.
//
// The table is the host's CPUID with the features the emulator cannot run
// or that make a recording depend on where it ran masked out: AVX, AVX2,
// AVX-512, FMA, F16C, XSAVE/OSXSAVE (so glibc never uses xgetbv or xsave),
// BMI, RDRAND/RDSEED, TSX, leaf 7 entirely; the APIC ids read 0. Cache
// and topology leaves (2, 4, 0xb, 0x80000005/6) and the brand string stay
// the host's: glibc sizes its copy thresholds from them.
//
// In the ptrace engine, CPUID faulting (arch_prctl(ARCH_SET_CPUID, 0), the
// "cpuid_fault" CPU flag; execve resets it) makes every cpuid of the tracee
// raise SIGSEGV, which the engine answers from this table.
//
// Thread-safety: PortableCpuid() is pure (reads the host's cpuid);
// CpuidFaultingForThisThread acts on its thread only.
#pragma once

#include <sys/user.h>

#include <cstdint>

#include "backstep/core/status.h"
#include "recorder/tracee.h"

namespace backstep::record {

struct CpuidResult {
  std::uint32_t eax = 0, ebx = 0, ecx = 0, edx = 0;
};

// The portable table's answer for (leaf, subleaf).
CpuidResult PortableCpuid(std::uint32_t leaf, std::uint32_t subleaf);

// Turns on CPUID faulting in a tracee stopped after exec, by making it run
// arch_prctl(ARCH_SET_CPUID, 0) (a `syscall` written over the instruction at
// rip, then the bytes and registers restored). Unsupported when the CPU or
// the kernel cannot fault CPUID.
core::Status EnableCpuidFaulting(Tracee& tracee);

// The CPU's own answer: cpuid run by the caller (with CPUID faulting lifted
// for it when the thread has it: CpuidFaultingForThisThread).
CpuidResult HostCpuid(std::uint32_t leaf, std::uint32_t subleaf);

// While it lives, the calling thread has CPUID faulting too (nothing when
// `enable` is false, the CPU cannot fault CPUID or the thread has it
// already). A tracer does so while it drives a tracee that has it: on a
// switch between two threads that differ, the kernel rewrites the CPU's
// faulting setting (an MSR write, which a VM traps: ~9 us each here), and a
// traced system call is four switches. PortableCpuid() and HostCpuid() lift
// it for their own cpuid; any other cpuid the thread runs meanwhile raises
// SIGSEGV (glibc and libstdc++ read CPUID only at start-up).
class CpuidFaultingForThisThread {
 public:
  explicit CpuidFaultingForThisThread(bool enable);
  ~CpuidFaultingForThisThread();
  CpuidFaultingForThisThread(const CpuidFaultingForThisThread&) = delete;
  CpuidFaultingForThisThread& operator=(const CpuidFaultingForThisThread&) = delete;

 private:
  bool on_ = false;
};

// Whether the tracee's instruction at `pc` is cpuid (0f a2).
bool IsCpuidAt(const Tracee& tracee, std::uint64_t pc);

// `r` (the host's answer for `leaf`) with the fields that name the CPU
// that asked (the APIC ids of leaves 1, 0xb and 0x1f; AMD's leaf 0x8000001e
// extended APIC, core and node ids) replaced by those of the first CPU this
// process may use, as last read (PrimeHostCpuIds). They differ between
// CPUs and, on some VMs, on one CPU from minute to minute; so every answer
// backstep gives from the host (the ptrace engine's, a native recording's
// materialization) names one CPU, the one the native engine pins a program
// to, as that program's own cpuid did when it ran about then.
CpuidResult WithFirstCpuIds(std::uint32_t leaf, CpuidResult r);

// Reads those ids again, now (otherwise the first answer does, and a child
// process keeps its parent's): the native engine does at the start of a
// recording, and a test that compares recordings before it makes them.
void PrimeHostCpuIds();

// Executes cpuid on `regs` (eax, ecx in; eax..edx out, rip past it): the
// portable table's answer, or (`portable` false) the host CPU's own,
// WithFirstCpuIds.
void AnswerCpuid(user_regs_struct* regs, bool portable = true);

}  // namespace backstep::record
