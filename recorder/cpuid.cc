#include "recorder/cpuid.h"

#include <asm/prctl.h>
#include <cpuid.h>
#include <sys/syscall.h>

#include <cerrno>
#include <cstring>
#include <mutex>
#include <optional>
#include <string>

#include "recorder/one_cpu.h"

namespace backstep::record {
namespace {

constexpr std::uint32_t Bit(int n) { return std::uint32_t{1} << n; }

// Leaf 1 ECX: SSE3, PCLMULQDQ, SSSE3, CX16, SSE4.1, SSE4.2, POPCNT. Not:
// FMA (12), MOVBE (22), AES (25), XSAVE (26), OSXSAVE (27), AVX (28),
// F16C (29), RDRAND (30), x2APIC and the system bits.
constexpr std::uint32_t kLeaf1Ecx =
    Bit(0) | Bit(1) | Bit(9) | Bit(13) | Bit(19) | Bit(20) | Bit(23);
// Leaf 1 EDX: FPU, VME, DE, PSE, TSC, MSR, PAE, MCE, CX8, APIC, SEP, MTRR,
// PGE, MCA, CMOV, PAT, PSE36, CLFSH, MMX, FXSR, SSE, SSE2, HTT.
constexpr std::uint32_t kLeaf1Edx =
    (0x07ffffff & ~(Bit(10) | Bit(18) | Bit(20) | Bit(21) | Bit(22))) | Bit(28);
// 0x80000001 ECX: LAHF/SAHF, PREFETCHW. EDX: SYSCALL, NX, RDTSCP, LM.
constexpr std::uint32_t kExt1Ecx = Bit(0) | Bit(8);
constexpr std::uint32_t kExt1Edx = Bit(11) | Bit(20) | Bit(27) | Bit(29);

constexpr std::uint32_t kMaxBasic = 0xd, kMaxExtended = 0x80000008;

// This thread has CPUID faulting (CpuidFaultingForThisThread).
thread_local bool t_faulting = false;

CpuidResult Host(std::uint32_t leaf, std::uint32_t subleaf) {
  if (t_faulting) syscall(SYS_arch_prctl, ARCH_SET_CPUID, 1);
  CpuidResult r;
  __cpuid_count(leaf, subleaf, r.eax, r.ebx, r.ecx, r.edx);
  if (t_faulting) syscall(SYS_arch_prctl, ARCH_SET_CPUID, 0);
  return r;
}

}  // namespace

CpuidResult HostCpuid(std::uint32_t leaf, std::uint32_t subleaf) { return Host(leaf, subleaf); }

CpuidFaultingForThisThread::CpuidFaultingForThisThread(bool enable) {
  if (!enable || t_faulting) return;
  on_ = syscall(SYS_arch_prctl, ARCH_SET_CPUID, 0) == 0;
  t_faulting = on_;
}

CpuidFaultingForThisThread::~CpuidFaultingForThisThread() {
  if (!on_) return;
  syscall(SYS_arch_prctl, ARCH_SET_CPUID, 1);
  t_faulting = false;
}

CpuidResult PortableCpuid(std::uint32_t leaf, std::uint32_t subleaf) {
  const CpuidResult max_basic = Host(0, 0);
  const CpuidResult max_ext = Host(0x80000000, 0);
  const bool basic = leaf < 0x80000000;
  if (basic ? leaf > std::min(max_basic.eax, kMaxBasic)
            : leaf > std::min(max_ext.eax, kMaxExtended)) {
    return {};  // beyond the table: all zeros (as for leaves we do not pass)
  }
  CpuidResult r = Host(leaf, subleaf);
  switch (leaf) {
    case 0:
      r.eax = std::min(r.eax, kMaxBasic);
      return r;
    case 1:
      r.ebx &= 0x00ffffff;  // initial APIC id
      r.ecx &= kLeaf1Ecx;
      r.edx &= kLeaf1Edx;
      return r;
    case 2:
    case 4:
      return r;
    case 0xb:
      r.edx = 0;  // x2APIC id
      return r;
    case 0x80000000:
      r.eax = std::min(r.eax, kMaxExtended);
      return r;
    case 0x80000001:
      r.ecx &= kExt1Ecx;
      r.edx &= kExt1Edx;
      return r;
    case 0x80000002:
    case 0x80000003:
    case 0x80000004:
    case 0x80000005:
    case 0x80000006:
      return r;
    case 0x80000008:
      return {r.eax, 0, 0, 0};  // address sizes only
    default:
      return {};  // leaf 7 (AVX2, AVX-512, BMI, ERMS...), 0xd (XSAVE), ...
  }
}

core::Status EnableCpuidFaulting(Tracee& tracee) {
  user_regs_struct saved{};
  if (core::Status s = tracee.GetRegs(&saved); !s.ok()) return s;
  std::uint8_t code[2] = {};
  if (tracee.ReadMemory(saved.rip, code) != 2)
    return core::Status::IOError("cannot read the program's first instruction");
  static const std::uint8_t kSyscall[2] = {0x0f, 0x05};
  if (core::Status s = tracee.WriteMemory(saved.rip, kSyscall); !s.ok()) return s;
  user_regs_struct call = saved;
  call.rax = SYS_arch_prctl;
  call.rdi = ARCH_SET_CPUID;
  call.rsi = 0;  // 0: cpuid faults
  core::Status status = tracee.SetRegs(call);
  if (status.ok()) {
    core::Expected<Stop> stop = tracee.Step();
    if (!stop.ok()) {
      status = stop.status();
    } else if (stop->kind != Stop::kStepped) {
      status = core::Status::IOError("the program did not stop after arch_prctl(ARCH_SET_CPUID)");
    }
  }
  user_regs_struct after{};
  if (status.ok()) status = tracee.GetRegs(&after);
  if (!tracee.alive()) return status;
  // Restore the bytes and the registers whatever happened.
  if (core::Status s = tracee.WriteMemory(saved.rip, code); !s.ok() && status.ok()) status = s;
  if (core::Status s = tracee.SetRegs(saved); !s.ok() && status.ok()) status = s;
  if (!status.ok()) return status;
  if (after.rax != 0) {
    const int e = -static_cast<int>(after.rax);
    return core::Status::Unsupported(
        "--cpuid portable: this machine cannot make CPUID fault (arch_prctl(ARCH_SET_CPUID): " +
        std::string(std::strerror(e)) + "; the CPU needs the cpuid_fault feature)");
  }
  return core::Status::Ok();
}

bool IsCpuidAt(const Tracee& tracee, std::uint64_t pc) {
  std::uint8_t code[2] = {};
  return tracee.ReadMemory(pc, code) == 2 && code[0] == 0x0f && code[1] == 0xa2;
}

namespace {

// The id fields WithFirstCpuIds puts in (those of the first allowed CPU).
struct CpuIds {
  std::uint32_t apic = 0, x2apic_b = 0, x2apic_1f = 0;
  std::uint32_t ext_apic = 0, core = 0, node = 0;
};

// The ids of the first CPU the calling thread may use, read now.
CpuIds ReadFirstCpuIds() {
  const ThreadOnCpu on(FirstAllowedCpu());
  CpuIds r;
  const std::uint32_t max_basic = Host(0, 0).eax, max_ext = Host(0x80000000, 0).eax;
  r.apic = Host(1, 0).ebx & 0xff000000;
  if (max_basic >= 0xb) r.x2apic_b = Host(0xb, 0).edx;
  if (max_basic >= 0x1f) r.x2apic_1f = Host(0x1f, 0).edx;
  if (max_ext >= 0x8000001e) {
    const CpuidResult e = Host(0x8000001e, 0);
    r.ext_apic = e.eax;
    r.core = e.ebx & 0xff;
    r.node = e.ecx & 0xff;
  }
  return r;
}

std::mutex g_ids_mutex;
std::optional<CpuIds> g_ids;  // guarded by g_ids_mutex

CpuIds FirstCpuIds() {
  std::lock_guard<std::mutex> lock(g_ids_mutex);
  if (!g_ids) g_ids = ReadFirstCpuIds();
  return *g_ids;
}

}  // namespace

void PrimeHostCpuIds() {
  const CpuIds ids = ReadFirstCpuIds();
  std::lock_guard<std::mutex> lock(g_ids_mutex);
  g_ids = ids;
}

CpuidResult WithFirstCpuIds(std::uint32_t leaf, CpuidResult r) {
  const CpuIds ids = FirstCpuIds();
  switch (leaf) {
    case 1:
      r.ebx = (r.ebx & 0x00ffffff) | ids.apic;
      break;
    case 0xb:
      r.edx = ids.x2apic_b;
      break;
    case 0x1f:
      r.edx = ids.x2apic_1f;
      break;
    case 0x8000001e:
      r.eax = ids.ext_apic;
      r.ebx = (r.ebx & ~0xffu) | ids.core;
      r.ecx = (r.ecx & ~0xffu) | ids.node;
      break;
    default:
      break;
  }
  return r;
}

void AnswerCpuid(user_regs_struct* regs, bool portable) {
  const auto leaf = static_cast<std::uint32_t>(regs->rax);
  const auto subleaf = static_cast<std::uint32_t>(regs->rcx);
  const CpuidResult r =
      portable ? PortableCpuid(leaf, subleaf) : WithFirstCpuIds(leaf, Host(leaf, subleaf));
  regs->rax = r.eax;
  regs->rbx = r.ebx;
  regs->rcx = r.ecx;
  regs->rdx = r.edx;
  regs->rip += 2;
}

}  // namespace backstep::record
