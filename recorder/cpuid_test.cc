// PortableCpuid (cpuid.h): the table both engines show hides what the
// emulator cannot run (AVX and everything that needs XSAVE state) and what
// varies between CPUs of one machine (APIC ids), and keeps the x86-64
// baseline glibc's ld.so checks before it runs anything.
#include "recorder/cpuid.h"

#include <asm/prctl.h>
#include <cpuid.h>
#include <gtest/gtest.h>
#include <sys/syscall.h>
#include <unistd.h>

namespace backstep::record {
namespace {

constexpr std::uint32_t Bit(int n) { return std::uint32_t{1} << n; }

TEST(PortableCpuid, KeepsTheX86_64Baseline) {
  // ld.so refuses a CPU below x86-64 v1: "CPU ISA level is lower than required".
  const CpuidResult one = PortableCpuid(1, 0);
  for (int bit : {0, 8, 15, 23, 24, 25, 26})  // FPU CX8 CMOV MMX FXSR SSE SSE2
    EXPECT_TRUE(one.edx & Bit(bit)) << "leaf 1 edx bit " << bit;
  const CpuidResult ext = PortableCpuid(0x80000001, 0);
  EXPECT_TRUE(ext.edx & Bit(29)) << "long mode";
  EXPECT_TRUE(ext.edx & Bit(11)) << "syscall";
}

TEST(PortableCpuid, HidesAvxXsaveAndApicIds) {
  const CpuidResult one = PortableCpuid(1, 0);
  for (int bit : {12, 26, 27, 28, 29, 30})  // FMA XSAVE OSXSAVE AVX F16C RDRAND
    EXPECT_FALSE(one.ecx & Bit(bit)) << "leaf 1 ecx bit " << bit;
  EXPECT_EQ(one.ebx >> 24, 0u) << "initial APIC id";
  for (std::uint32_t sub : {0u, 1u}) {
    const CpuidResult seven = PortableCpuid(7, sub);  // AVX2, AVX-512, BMI, ERMS...
    EXPECT_EQ(seven.eax | seven.ebx | seven.ecx | seven.edx, 0u);
  }
  const CpuidResult xsave = PortableCpuid(0xd, 0);
  EXPECT_EQ(xsave.eax | xsave.ebx | xsave.ecx | xsave.edx, 0u);
  EXPECT_LE(PortableCpuid(0, 0).eax, 0xdu);
  EXPECT_EQ(PortableCpuid(0xb, 0).edx, 0u) << "x2APIC id";
}

TEST(PortableCpuid, IsTheHostsVendorAndASubsetOfItsFeatures) {
  unsigned a = 0, b = 0, c = 0, d = 0;
  __cpuid_count(0, 0, a, b, c, d);
  const CpuidResult zero = PortableCpuid(0, 0);
  EXPECT_EQ(zero.ebx, b);
  EXPECT_EQ(zero.ecx, c);
  EXPECT_EQ(zero.edx, d);
  __cpuid_count(1, 0, a, b, c, d);
  const CpuidResult one = PortableCpuid(1, 0);
  EXPECT_EQ(one.ecx & ~c, 0u);
  EXPECT_EQ(one.edx & ~d, 0u);
  EXPECT_EQ(one.eax, a);  // family, model, stepping
}

// The recorder's thread faults CPUID while it drives a tracee that does
// (native_recorder.cc): its own answers still come from the CPU, and the
// thread gets its cpuid back after.
TEST(CpuidFaultingForThisThread, LiftsItForTheAnswersAndEnds) {
  if (syscall(SYS_arch_prctl, ARCH_SET_CPUID, 1) != 0) GTEST_SKIP() << "no CPUID faulting here";
  const CpuidResult portable = PortableCpuid(1, 0), host = HostCpuid(0x80000001, 0);
  {
    const CpuidFaultingForThisThread faulting(true);
    EXPECT_EQ(syscall(SYS_arch_prctl, ARCH_GET_CPUID, 0), 0) << "this thread's cpuid faults";
    // Without the lift these would die of SIGSEGV.
    const CpuidResult p = PortableCpuid(1, 0), h = HostCpuid(0x80000001, 0);
    EXPECT_EQ(syscall(SYS_arch_prctl, ARCH_GET_CPUID, 0), 0) << "still faulting after them";
    EXPECT_EQ(p.eax, portable.eax);
    EXPECT_EQ(p.ecx, portable.ecx);
    EXPECT_EQ(p.edx, portable.edx);
    EXPECT_EQ(h.ecx, host.ecx);
    EXPECT_EQ(h.edx, host.edx);
    const CpuidFaultingForThisThread nested(true);  // already on: nothing
  }
  EXPECT_EQ(syscall(SYS_arch_prctl, ARCH_GET_CPUID, 0), 1) << "cpuid runs again";
  const CpuidFaultingForThisThread off(false);
  EXPECT_EQ(syscall(SYS_arch_prctl, ARCH_GET_CPUID, 0), 1);
}

}  // namespace
}  // namespace backstep::record
