#include "recorder/emu/emu_recorder.h"

#include <capstone/capstone.h>
#include <signal.h>
#include <sys/ptrace.h>
#include <unicorn/unicorn.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <optional>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "recorder/address_space.h"
#include "recorder/cpu_state.h"
#include "recorder/cpuid.h"
#include "recorder/emu/native_flags.h"
#include "recorder/insn_decoder.h"
#include "recorder/run_session.h"
#include "recorder/syscall_effects.h"
#include "recorder/untraced.h"
#include "recorder/vdso.h"

namespace backstep::record {
namespace {

constexpr std::uint64_t kPage = 4096;
constexpr std::uint64_t kTf = 1u << 8, kRf = 1u << 16;
constexpr std::size_t kGprs = 25;  // CpuLayout's GPR slots
// The GPRs read after every instruction, in CpuLayout's slot order (rax ..
// r15, eflags); selectors and fs/gs base change only in system calls.
constexpr int kHotRegs[] = {UC_X86_REG_RAX,   UC_X86_REG_RBX, UC_X86_REG_RCX, UC_X86_REG_RDX,
                            UC_X86_REG_RSI,   UC_X86_REG_RDI, UC_X86_REG_RBP, UC_X86_REG_RSP,
                            UC_X86_REG_R8,    UC_X86_REG_R9,  UC_X86_REG_R10, UC_X86_REG_R11,
                            UC_X86_REG_R12,   UC_X86_REG_R13, UC_X86_REG_R14, UC_X86_REG_R15,
                            UC_X86_REG_RFLAGS};
constexpr std::size_t kHot = sizeof kHotRegs / sizeof kHotRegs[0];
constexpr std::size_t kFsBaseSlot = 23, kGsBaseSlot = 24;
constexpr std::uint64_t kSysGetrandom = 318, kSysRtSigreturn = 15;
constexpr std::uint64_t kMaxStackGrowth = 8u << 20;  // the default RLIMIT_STACK

// Instructions that leave some arithmetic flags "undefined": the real CPU
// and QEMU's TCG set them differently, so the CPU runs them (NativeInsn in
// the recorder, or the tracee: see OnCode()). AND/OR/XOR/TEST leave AF
// undefined too, but both clear it (the cross-check test would see it).
bool UndefinedFlags(unsigned id) {
  switch (id) {
    case X86_INS_MUL:
    case X86_INS_IMUL:
    case X86_INS_DIV:
    case X86_INS_IDIV:
    case X86_INS_BSF:
    case X86_INS_BSR:
    case X86_INS_BT:
    case X86_INS_BTS:
    case X86_INS_BTR:
    case X86_INS_BTC:
    case X86_INS_SHL:
    case X86_INS_SAL:
    case X86_INS_SHR:
    case X86_INS_SAR:
    case X86_INS_ROL:
    case X86_INS_ROR:
    case X86_INS_RCL:
    case X86_INS_RCR:
    case X86_INS_SHLD:
    case X86_INS_SHRD:
    case X86_INS_TZCNT:
    case X86_INS_LZCNT:
    case X86_INS_ANDN:
    case X86_INS_BEXTR:
    case X86_INS_BLSI:
    case X86_INS_BLSR:
    case X86_INS_BLSMSK:
      return true;
    default:
      return false;
  }
}

// SSE arithmetic that sets MXCSR's exception flags, which QEMU 5's TCG
// does not: run natively too (see NativeStep()).
bool SetsSimdFlags(const char* mnemonic) {
  const std::string m = mnemonic;
  if (m.rfind("cvt", 0) == 0) return true;
  const std::size_t n = m.size();
  if (n < 4) return false;
  const std::string suffix = m.substr(n - 2);
  if (suffix != "ss" && suffix != "sd" && suffix != "ps" && suffix != "pd") return false;
  for (const char* p : {"add", "sub", "mul", "div", "sqrt", "min", "max", "comis", "ucomis", "cmp",
                        "round", "dp", "hadd", "hsub"}) {
    if (m.rfind(p, 0) == 0) return true;
  }
  return false;
}

// Whether the kernel would discard `sig` in process `pid`: ignored (SIG_IGN),
// or no handler and ignored by default (SIGCHLD, SIGURG, SIGWINCH).
bool Discarded(pid_t pid, int sig) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  std::uint64_t caught = ~std::uint64_t{0}, ignored = 0;
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("SigCgt:", 0) == 0) caught = std::stoull(line.substr(7), nullptr, 16);
    if (line.rfind("SigIgn:", 0) == 0) ignored = std::stoull(line.substr(7), nullptr, 16);
  }
  const std::uint64_t bit = std::uint64_t{1} << (sig - 1);
  if (ignored & bit) return true;
  return !(caught & bit) && (sig == SIGCHLD || sig == SIGURG || sig == SIGWINCH);
}

// -ERESTARTSYS, -ERESTARTNOINTR, -ERESTARTNOHAND, -ERESTART_RESTARTBLOCK:
// the kernel restarts the system call when no handler runs.
bool Restarts(std::uint64_t rax) {
  const std::int64_t r = static_cast<std::int64_t>(rax);
  return r == -512 || r == -513 || r == -514 || r == -516;
}

std::string Hex(std::uint64_t v) {
  char buf[24];
  std::snprintf(buf, sizeof buf, "0x%llx", static_cast<unsigned long long>(v));
  return buf;
}

std::uint32_t UcProt(const Mapping& m) {
  return (m.read ? UC_PROT_READ : 0) | (m.write ? UC_PROT_WRITE : 0) | (m.exec ? UC_PROT_EXEC : 0);
}

bool Unreadable(const Mapping& m) { return m.name.rfind("[vvar", 0) == 0; }

class EmuSession {
 public:
  EmuSession(const RecordOptions& options, const EmuOptions& emu, RecordingSink& sink,
             Tracee tracee)
      : options_(options), emu_(emu), sink_(sink), tracee_(std::move(tracee)) {}
  ~EmuSession() {
    if (uc_) uc_close(uc_);
    if (capstone_) cs_close(&capstone_);
  }
  EmuSession(const EmuSession&) = delete;
  EmuSession& operator=(const EmuSession&) = delete;

  core::Status Start();
  core::Status Run();
  RecordResult& result() { return result_; }

 private:
  // Unicorn callbacks (user_data = this).
  static void HookCode(uc_engine* uc, std::uint64_t address, std::uint32_t size, void* self);
  static void HookWrite(uc_engine* uc, uc_mem_type type, std::uint64_t address, int size,
                        std::int64_t value, void* self);
  static void HookSyscall(uc_engine* uc, void* self);
  static int HookCpuid(uc_engine* uc, void* self);
  static void HookInterrupt(uc_engine* uc, std::uint32_t number, void* self);
  core::Status GrowStack(core::Address address);
  static bool HookUnmapped(uc_engine* uc, uc_mem_type type, std::uint64_t address, int size,
                           std::int64_t value, void* self);
  static void HookVvarRead(uc_engine* uc, uc_mem_type type, std::uint64_t address, int size,
                           std::int64_t value, void* self);

  void OnCode(core::Address pc, std::uint32_t size);
  void OnSyscall();
  core::Status ProxySyscall();
  // Emits the pending instruction (registers read after it).
  void Retire();
  core::Status NativeStep(core::Address pc, std::uint8_t size, bool simd, bool memory);
  core::Status DeliverFault(int sig);
  core::Status LoadFpFromTracee();
  // Emits a natively run instruction's event (GPRs after: v; writes in
  // data_/spans_; FP changes already in changes_) and continues at rip.
  void FinishNative(core::Address pc, std::uint8_t size, const std::uint64_t* v, core::Address rip);
  void Halt(core::Status why);
  void ReadHot(std::uint64_t* values);
  // Fills slots_[gpr_count, count) from Unicorn's x87/SSE state.
  void CollectFp(std::vector<core::RegisterWrite>* slots);
  core::Status MapInto(const Mapping& m, bool with_contents);
  core::Status SyncDirty();
  void Capture(std::span<const Range> ranges);
  core::Status ApplyMapChanges(const MapChanges& maps);
  void WriteGprs(const user_regs_struct& r);
  user_regs_struct EmulatorRegs();
  void AddWrite(core::Address address, const std::uint8_t* bytes, std::size_t n);
  void BuildWrites();
  // Appends to changes_ the hot registers in v (kHot values, kHotRegs's
  // order) that differ from gpr_, and takes them into gpr_ and slots_.
  void DiffHot(const std::uint64_t* v);

  const RecordOptions& options_;
  const EmuOptions& emu_;
  RecordingSink& sink_;
  Tracee tracee_;
  uc_engine* uc_ = nullptr;
  CpuLayout layout_;
  InsnDecoder decoder_;
  AddressSpace space_;
  RecordResult result_;
  core::Status error_ = core::Status::Ok();
  bool done_ = false;

  user_regs_struct tracee_regs_{};  // selectors and the rest the emulator does not change
  std::uint64_t gpr_[kGprs] = {};   // current values, CpuLayout order
  std::vector<core::RegisterWrite> slots_, fp_slots_, changes_;
  std::vector<std::uint8_t> xstate_;  // FXSAVE image (+ the initial upper state)

  // The instruction whose code hook ran last and which has not been emitted.
  bool pending_ = false;
  core::Address pending_pc_ = 0;
  std::uint8_t pending_size_ = 0;
  bool pending_fp_ = false;
  bool pending_rep_ = false;     // a rep string instruction (QEMU: a hook per iteration)
  std::size_t next_random_ = 0;  // into emu_.getrandom
  std::size_t next_tsc_ = 0;     // into emu_.rdtsc
  std::uint64_t native_steps_ = 0, in_process_steps_ = 0;
  core::Address fault_address_ = 0;
  Traps traps_;  // what the tracee has set up (undone in forked children)
  // Where to go on after rt_sigreturn (set in the syscall hook, which cannot move rip).
  std::optional<core::Address> resume_at_;
  core::Address stack_low_ = 0;  // the stack mapping's start (grows down)
  std::uint16_t x87_fop_ = 0;    // the last x87 instruction's (from the CPU)
  std::uint64_t x87_fip_ = 0, x87_fdp_ = 0;
  NativeInsn native_;

  struct PcInfo {
    bool fp = false, rdtsc = false, rdtscp = false, rep = false;
    bool native = false;      // run by the CPU: undefined flags, rep string instructions
    bool simd_flags = false;  // ... and SSE arithmetic (MXCSR flags)
    bool memory = false;      // has a memory operand (the tracee needs the emulator's memory)
    bool in_process = false;  // register-only: run by NativeInsn in the recorder
    bool writable = false;    // ... from writable memory: check the bytes each time
    std::vector<std::uint8_t> bytes;
  };
  std::unordered_map<core::Address, PcInfo> info_;  // by pc; cleared with the decoder's cache
  csh capstone_ = 0;

  // Writes of the pending instruction: contents in data_, (address, size) in spans_.
  std::vector<std::uint8_t> data_;
  std::vector<std::pair<core::Address, std::size_t>> spans_;
  std::vector<core::MemoryAccess> writes_;
  std::vector<Range> ranges_, changed_;
  std::vector<Range> wide_;  // writes wider than 8 bytes (value not given by the hook)

  // Pages written since the last system call (to push into the tracee).
  std::vector<std::uint64_t> dirty_;
  std::unordered_set<std::uint64_t> dirty_set_;
  std::uint64_t last_dirty_ = ~std::uint64_t{0};
  std::vector<std::uint8_t> page_;
};

// ---------------------------------------------------------------- start

core::Status EmuSession::MapInto(const Mapping& m, bool with_contents) {
  if (m.name == "[vsyscall]") return core::Status::Ok();  // fixed kernel page: never used
  if (uc_err e = uc_mem_map(uc_, m.start, m.size, UcProt(m)); e != UC_ERR_OK) {
    return core::Status::IOError("emulator: cannot map " + Hex(m.start) + "+" + Hex(m.size) + " (" +
                                 uc_strerror(e) + ")");
  }
  if (Unreadable(m)) {
    uc_hook h;
    uc_hook_add(uc_, &h, UC_HOOK_MEM_READ, reinterpret_cast<void*>(&HookVvarRead), this, m.start,
                m.end() - 1);
    return core::Status::Ok();
  }
  if (!with_contents || !m.read) return core::Status::Ok();
  std::vector<std::uint8_t> bytes(m.size);
  tracee_.ReadMemoryZeroFill(m.start, bytes);
  uc_mem_write(uc_, m.start, bytes.data(), bytes.size());
  return core::Status::Ok();
}

core::Status EmuSession::Start() {
  // Not needed by the emulator itself (it answers cpuid), only by the proxy
  // tracee, which never runs user code: a machine without it is fine.
  traps_.cpuid = EnableCpuidFaulting(tracee_).ok();
  traps_.rdtsc = options_.spawn.trap_rdtsc;
  if (core::Status s = tracee_.GetRegs(&tracee_regs_); !s.ok()) return s;
  if (core::Status s = tracee_.GetXState(&xstate_); !s.ok()) return s;
  slots_.resize(layout_.count());
  layout_.CollectGprs(tracee_regs_, slots_);
  layout_.CollectFp(xstate_, slots_);
  for (std::size_t i = 0; i < kGprs; ++i) std::memcpy(&gpr_[i], slots_[i].value, 8);
  core::Expected<std::vector<std::uint8_t>> auxv = tracee_.ReadAuxv();
  if (!auxv.ok()) return auxv.status();
  // Without the vDSO, libc's clock functions are system calls, which the
  // tracee runs (the vDSO's would read the kernel's [vvar] page).
  if (core::Status s = HideVdso(tracee_, tracee_regs_.rsp, &*auxv); !s.ok()) return s;
  if (core::Status s = space_.Init(tracee_); !s.ok()) return s;
  if (emu_.at_random.size() == 16) {
    for (std::size_t i = 0; i + 16 <= auxv->size(); i += 16) {
      std::uint64_t type = 0, value = 0;
      std::memcpy(&type, &(*auxv)[i], 8);
      std::memcpy(&value, &(*auxv)[i + 8], 8);
      if (type != 25) continue;  // AT_RANDOM
      if (core::Status s = tracee_.WriteMemory(value, emu_.at_random); !s.ok()) return s;
      space_.Note(value, emu_.at_random);
    }
  }

  if (cs_open(CS_ARCH_X86, CS_MODE_64, &capstone_) != CS_ERR_OK) {
    capstone_ = 0;
    return core::Status::IOError("emulator: capstone cannot decode x86-64");
  }
  cs_option(capstone_, CS_OPT_DETAIL, CS_OPT_ON);
  if (uc_err e = uc_open(UC_ARCH_X86, UC_MODE_64, &uc_); e != UC_ERR_OK) {
    uc_ = nullptr;
    return core::Status::IOError(std::string("emulator: uc_open: ") + uc_strerror(e));
  }
  // A model whose TCG decodes tzcnt/lzcnt as the host does (BMI1, ABM);
  // what the program is told is PortableCpuid().
  uc_ctl_set_cpu_model(uc_, UC_CPU_X86_HASWELL);
  for (const Mapping& m : space_.mappings()) {
    if (core::Status s = MapInto(m, true); !s.ok()) return s;
    if (m.name == "[stack]") stack_low_ = m.start;
  }
  // Registers: GPRs, flags, fs/gs base, then the x87/SSE state.
  WriteGprs(tracee_regs_);
  std::uint64_t rip = tracee_regs_.rip, fs = tracee_regs_.fs_base, gs = tracee_regs_.gs_base;
  uc_reg_write(uc_, UC_X86_REG_RIP, &rip);
  uc_reg_write(uc_, UC_X86_REG_FS_BASE, &fs);
  uc_reg_write(uc_, UC_X86_REG_GS_BASE, &gs);
  {
    std::uint16_t fcw = 0, fsw = 0;
    std::memcpy(&fcw, &xstate_[0], 2);
    std::memcpy(&fsw, &xstate_[2], 2);
    std::uint32_t mxcsr = 0;
    std::memcpy(&mxcsr, &xstate_[24], 4);
    uc_reg_write(uc_, UC_X86_REG_FPCW, &fcw);
    uc_reg_write(uc_, UC_X86_REG_FPSW, &fsw);
    uc_reg_write(uc_, UC_X86_REG_MXCSR, &mxcsr);
    std::uint16_t tag = FullTagWord(xstate_[4], fsw, &xstate_[32]);
    uc_reg_write(uc_, UC_X86_REG_FPTAG, &tag);
    for (int i = 0; i < 16; ++i) {
      std::uint8_t xmm[16];
      std::memcpy(xmm, &xstate_[160 + 16 * i], 16);
      uc_reg_write(uc_, UC_X86_REG_XMM0 + i, xmm);
    }
  }
  // Check that what Unicorn reports is what the tracee had (the FP state
  // after exec is the architectural default).
  fp_slots_ = slots_;
  CollectFp(&fp_slots_);
  for (std::size_t i = layout_.gpr_count(); i < layout_.count(); ++i) {
    if (std::memcmp(fp_slots_[i].value, slots_[i].value, layout_.size(i)) != 0) {
      std::uint64_t want = 0, got = 0;
      std::memcpy(&want, slots_[i].value, 8);
      std::memcpy(&got, fp_slots_[i].value, 8);
      return core::Status::Unsupported(
          "emulator: the program's initial x87/SSE state cannot be loaded into the emulator (" +
          std::string(core::X86_64().info(slots_[i].reg).name) + ": " + Hex(want) + " vs " +
          Hex(got) + ")");
    }
  }

  uc_hook h;
  uc_hook_add(uc_, &h, UC_HOOK_CODE, reinterpret_cast<void*>(&HookCode), this, 1, 0);
  uc_hook_add(uc_, &h, UC_HOOK_MEM_WRITE, reinterpret_cast<void*>(&HookWrite), this, 1, 0);
  uc_hook_add(uc_, &h, UC_HOOK_INSN, reinterpret_cast<void*>(&HookSyscall), this, 1, 0,
              UC_X86_INS_SYSCALL);
  uc_hook_add(uc_, &h, UC_HOOK_INSN, reinterpret_cast<void*>(&HookCpuid), this, 1, 0,
              UC_X86_INS_CPUID);
  uc_hook_add(uc_, &h, UC_HOOK_INTR, reinterpret_cast<void*>(&HookInterrupt), this, 1, 0);
  uc_hook_add(uc_, &h, UC_HOOK_MEM_UNMAPPED, reinterpret_cast<void*>(&HookUnmapped), this, 1, 0);

  StartInfo start;
  start.pid = static_cast<std::uint64_t>(tracee_.pid());
  start.executable = tracee_.ExecutablePath();
  start.auxv = std::move(*auxv);
  start.mappings = space_.mappings();
  start.contents = [this](const Mapping& m, std::vector<std::uint8_t>* out) {
    out->assign(m.size, 0);
    if (!Unreadable(m) && m.name != "[vsyscall]") tracee_.ReadMemoryZeroFill(m.start, *out);
    return core::Status::Ok();
  };
  start.registers = slots_;
  start.pc = tracee_regs_.rip;
  return sink_.OnStart(start);
}

// ---------------------------------------------------------------- registers

void EmuSession::ReadHot(std::uint64_t* values) {
  void* ptrs[kHot];
  for (std::size_t i = 0; i < kHot; ++i) ptrs[i] = &values[i];
  uc_reg_read_batch(uc_, const_cast<int*>(kHotRegs), ptrs, static_cast<int>(kHot));
  values[16] &= ~kRf;
}

void EmuSession::WriteGprs(const user_regs_struct& r) {
  std::uint64_t v[kHot] = {r.rax, r.rbx, r.rcx, r.rdx, r.rsi, r.rdi, r.rbp, r.rsp,   r.r8,
                           r.r9,  r.r10, r.r11, r.r12, r.r13, r.r14, r.r15, r.eflags};
  void* ptrs[kHot];
  for (std::size_t i = 0; i < kHot; ++i) ptrs[i] = &v[i];
  uc_reg_write_batch(uc_, const_cast<int*>(kHotRegs), ptrs, static_cast<int>(kHot));
}

user_regs_struct EmuSession::EmulatorRegs() {
  user_regs_struct r = tracee_regs_;
  std::uint64_t v[kHot] = {};
  ReadHot(v);
  r.rax = v[0], r.rbx = v[1], r.rcx = v[2], r.rdx = v[3], r.rsi = v[4], r.rdi = v[5];
  r.rbp = v[6], r.rsp = v[7], r.r8 = v[8], r.r9 = v[9], r.r10 = v[10], r.r11 = v[11];
  r.r12 = v[12], r.r13 = v[13], r.r14 = v[14], r.r15 = v[15], r.eflags = v[16];
  r.fs_base = gpr_[kFsBaseSlot];
  r.gs_base = gpr_[kGsBaseSlot];
  std::uint64_t rip = 0;
  uc_reg_read(uc_, UC_X86_REG_RIP, &rip);
  r.rip = rip;
  return r;
}

void EmuSession::CollectFp(std::vector<core::RegisterWrite>* slots) {
  // An FXSAVE image from Unicorn's registers, so that CpuLayout::CollectFp
  // produces exactly what it produces from the kernel's XSAVE image.
  static constexpr int kIds[] = {UC_X86_REG_FPCW,  UC_X86_REG_FPSW, UC_X86_REG_FPTAG,
                                 UC_X86_REG_MXCSR, UC_X86_REG_FOP,  UC_X86_REG_FIP,
                                 UC_X86_REG_FDP};
  std::uint64_t v[7] = {};
  void* ptrs[7];
  for (int i = 0; i < 7; ++i) ptrs[i] = &v[i];
  uc_reg_read_batch(uc_, const_cast<int*>(kIds), ptrs, 7);
  std::uint8_t* x = xstate_.data();
  const std::uint16_t fcw = static_cast<std::uint16_t>(v[0]),
                      fsw = static_cast<std::uint16_t>(v[1]);
  const std::uint16_t tag = static_cast<std::uint16_t>(v[2]);
  std::memcpy(&x[0], &fcw, 2);
  std::memcpy(&x[2], &fsw, 2);
  std::uint8_t abridged = 0;
  for (int i = 0; i < 8; ++i) {
    if (((tag >> (2 * i)) & 3) != 3) abridged |= static_cast<std::uint8_t>(1u << i);
  }
  x[4] = abridged;
  // The last x87 instruction's opcode and pointers: TCG does not keep them,
  // the CPU's from the last x87 instruction run natively do.
  std::memcpy(&x[6], &x87_fop_, 2);
  std::memcpy(&x[8], &x87_fip_, 8);
  std::memcpy(&x[16], &x87_fdp_, 8);
  const std::uint32_t mxcsr = static_cast<std::uint32_t>(v[3]);
  std::memcpy(&x[24], &mxcsr, 4);
  const unsigned top = (fsw >> 11) & 7;
  for (unsigned st = 0; st < 8; ++st) {
    std::uint8_t reg[16] = {};
    uc_reg_read(uc_, UC_X86_REG_FP0 + static_cast<int>((top + st) & 7), reg);
    std::memcpy(&x[32 + 16 * st], reg, 16);
    std::memset(&x[32 + 16 * st + 10], 0, 6);
  }
  for (int i = 0; i < 16; ++i) uc_reg_read(uc_, UC_X86_REG_XMM0 + i, &x[160 + 16 * i]);
  layout_.CollectFp(xstate_, *slots);
}

// ---------------------------------------------------------------- hooks

void EmuSession::HookCode(uc_engine*, std::uint64_t address, std::uint32_t size, void* self) {
  static_cast<EmuSession*>(self)->OnCode(address, size);
}

void EmuSession::HookWrite(uc_engine*, uc_mem_type, std::uint64_t address, int size,
                           std::int64_t value, void* self) {
  auto* s = static_cast<EmuSession*>(self);
  if (size > 8) {
    s->wide_.push_back({address, static_cast<std::uint64_t>(size)});  // contents read after it
  } else {
    std::uint8_t bytes[8];
    std::memcpy(bytes, &value, 8);
    s->AddWrite(address, bytes, static_cast<std::size_t>(size));
  }
  for (std::uint64_t page = address / kPage; page <= (address + size - 1) / kPage; ++page) {
    if (page == s->last_dirty_) continue;
    s->last_dirty_ = page;
    if (s->dirty_set_.insert(page).second) s->dirty_.push_back(page);
  }
}

void EmuSession::HookSyscall(uc_engine*, void* self) {
  static_cast<EmuSession*>(self)->OnSyscall();
}

int EmuSession::HookCpuid(uc_engine* uc, void* self) {
  std::uint64_t rax = 0, rcx = 0;
  uc_reg_read(uc, UC_X86_REG_RAX, &rax);
  uc_reg_read(uc, UC_X86_REG_RCX, &rcx);
  const auto leaf = static_cast<std::uint32_t>(rax), subleaf = static_cast<std::uint32_t>(rcx);
  // Native recordings' hook (EmuOptions::cpuid): what the recorded program saw.
  const EmuOptions& emu = static_cast<EmuSession*>(self)->emu_;
  const CpuidResult r = emu.cpuid ? emu.cpuid(leaf, subleaf) : PortableCpuid(leaf, subleaf);
  std::uint64_t out[4] = {r.eax, r.ebx, r.ecx, r.edx};
  uc_reg_write(uc, UC_X86_REG_RAX, &out[0]);
  uc_reg_write(uc, UC_X86_REG_RBX, &out[1]);
  uc_reg_write(uc, UC_X86_REG_RCX, &out[2]);
  uc_reg_write(uc, UC_X86_REG_RDX, &out[3]);
  return 1;  // skip the emulator's own cpuid
}

void EmuSession::HookInterrupt(uc_engine*, std::uint32_t number, void* self) {
  auto* s = static_cast<EmuSession*>(self);
  s->Halt(core::Status::Unsupported(
      "the program raised CPU exception/interrupt " + std::to_string(number) + " at " +
      Hex(s->pending_pc_) +
      " (int3/int n, a division error, ...): signals are not supported by the emu engine"));
}

void EmuSession::HookVvarRead(uc_engine*, uc_mem_type, std::uint64_t address, int, std::int64_t,
                              void* self) {
  auto* s = static_cast<EmuSession*>(self);
  s->Halt(core::Status::Unsupported(
      "the program reads the kernel's [vvar] page at " + Hex(address) + " (from " +
      Hex(s->pending_pc_) +
      ": a vdso clock function): not supported by the emu engine, use --engine ptrace"));
}

bool EmuSession::HookUnmapped(uc_engine*, uc_mem_type, std::uint64_t address, int, std::int64_t,
                              void* self) {
  auto* s = static_cast<EmuSession*>(self);
  s->fault_address_ = address;
  // Below the stack, within its rlimit's reach: the kernel would grow it.
  if (s->stack_low_ && address < s->stack_low_ && address + kMaxStackGrowth >= s->stack_low_) {
    if (core::Status st = s->GrowStack(address); st.ok()) return true;  // retry the access
  }
  return false;  // a fault: uc_emu_start returns the error
}

// Grows the stack down to `address`, in the tracee (its own access faults
// the stack down, as the kernel does for the program) and in Unicorn.
core::Status EmuSession::GrowStack(core::Address address) {
  const core::Address low = address / kPage * kPage;
  user_regs_struct saved{};
  if (core::Status st = tracee_.GetRegs(&saved); !st.ok()) return st;
  std::uint8_t code[3] = {};
  if (tracee_.ReadMemory(saved.rip, code) != 3) return core::Status::IOError("stack growth");
  static const std::uint8_t kStore[3] = {0xc6, 0x00, 0x00};  // mov byte [rax], 0
  if (core::Status st = tracee_.WriteMemory(saved.rip, kStore); !st.ok()) return st;
  user_regs_struct r = saved;
  r.rax = low;
  core::Status status = tracee_.SetRegs(r);
  core::Expected<Stop> stop = status.ok() ? tracee_.Step() : core::Expected<Stop>(status);
  if (tracee_.alive()) {
    tracee_.WriteMemory(saved.rip, code);
    tracee_.SetRegs(saved);
  }
  if (!stop.ok()) return stop.status();
  if (stop->kind != Stop::kStepped) return core::Status::IOError("stack growth refused");
  if (uc_mem_map(uc_, low, stack_low_ - low, UC_PROT_READ | UC_PROT_WRITE) != UC_ERR_OK)
    return core::Status::IOError("stack growth: emulator");
  stack_low_ = low;
  return core::Status::Ok();
}

void EmuSession::Halt(core::Status why) {
  if (error_.ok() && !why.ok()) error_ = std::move(why);
  pending_ = false;  // never emit an instruction that did not complete
  done_ = true;
  uc_emu_stop(uc_);
}

// ---------------------------------------------------------------- per instruction

void EmuSession::AddWrite(core::Address address, const std::uint8_t* bytes, std::size_t n) {
  if (!spans_.empty()) {
    auto& [last, size] = spans_.back();
    if (last + size == address) {  // contiguous with the previous write
      data_.insert(data_.end(), bytes, bytes + n);
      size += n;
      return;
    }
  }
  data_.insert(data_.end(), bytes, bytes + n);
  spans_.push_back({address, n});
}

void EmuSession::BuildWrites() {
  writes_.clear();
  std::size_t offset = 0;
  for (const auto& [address, size] : spans_) {
    writes_.push_back({address, std::span<const std::uint8_t>(data_).subspan(offset, size)});
    offset += size;
  }
}

void EmuSession::DiffHot(const std::uint64_t* v) {
  for (std::size_t i = 0; i < kHot; ++i) {
    if (v[i] == gpr_[i]) continue;
    gpr_[i] = v[i];
    core::RegisterWrite& w = changes_.emplace_back();
    w.reg = slots_[i].reg;
    std::memcpy(w.value, &v[i], 8);
    std::memcpy(slots_[i].value, &v[i], 8);
  }
}

void EmuSession::Retire() {
  if (!pending_) return;
  pending_ = false;
  std::uint64_t v[kHot];
  ReadHot(v);
  changes_.clear();
  DiffHot(v);
  if (pending_fp_) {
    fp_slots_ = slots_;
    CollectFp(&fp_slots_);
    DiffRegisters(layout_, slots_, fp_slots_, layout_.gpr_count(), layout_.count(), &changes_);
    slots_.swap(fp_slots_);
  }
  for (const Range& r : wide_) {
    std::uint8_t bytes[64];
    const std::size_t n = std::min<std::size_t>(r.size, sizeof bytes);
    if (uc_mem_read(uc_, r.start, bytes, n) == UC_ERR_OK) AddWrite(r.start, bytes, n);
  }
  wide_.clear();
  BuildWrites();
  sink_.OnInstruction({pending_pc_, pending_size_, changes_, writes_, {}});
  ++result_.instructions;
  data_.clear();
  spans_.clear();
}

void EmuSession::OnCode(core::Address pc, std::uint32_t size) {
  if (pending_ && pending_rep_ && pc == pending_pc_) {
    return;  // the next iteration of a rep string instruction (not run natively)
  }
  Retire();
  if (done_) {
    uc_emu_stop(uc_);
    return;
  }
  if (options_.max_instructions && result_.instructions >= *options_.max_instructions) {
    result_.end = RecordResult::End::kMaxInstructions;
    Halt(core::Status::Ok());
    return;
  }
  if (options_.progress && result_.instructions % 4096 == 0 &&
      !options_.progress(result_.instructions)) {
    result_.end = RecordResult::End::kInterrupted;
    Halt(core::Status::Ok());
    return;
  }
  auto it = info_.find(pc);
  if (it != info_.end() && it->second.in_process && it->second.writable) {
    // Self-modifying code: the stub must run the bytes memory holds now.
    std::uint8_t now[16] = {};
    const std::size_t n = it->second.bytes.size();
    if (uc_mem_read(uc_, pc, now, n) != UC_ERR_OK ||
        std::memcmp(now, it->second.bytes.data(), n) != 0) {
      info_.erase(it);
      native_.Forget(pc);
      decoder_.Invalidate();
      it = info_.end();
    }
  }
  if (it == info_.end()) {
    std::uint8_t bytes[16] = {};
    const std::size_t n = std::min<std::size_t>(size, 15);
    uc_mem_read(uc_, pc, bytes, n);
    const Decoded& d = decoder_.Decode(pc, std::span<const std::uint8_t>(bytes, n));
    PcInfo info;
    info.fp = d.fp;
    info.rdtsc = d.rdtsc;
    info.rdtscp = d.rdtscp;
    cs_insn* insn = nullptr;
    const std::uint8_t* code = bytes;
    if (cs_disasm(capstone_, code, n, pc, 1, &insn) == 1) {
      info.rep = std::strncmp(insn->mnemonic, "rep", 3) == 0;
      // x87 (escape opcodes d8-df) and the FXSAVE/XSAVE family: TCG keeps no
      // x87 instruction/operand pointers and fxsave stores zeros for them.
      const std::uint8_t op0 = insn->detail->x86.opcode[0];
      const bool x87 = (op0 >= 0xd8 && op0 <= 0xdf) || insn->id == X86_INS_FXSAVE ||
                       insn->id == X86_INS_FXSAVE64 || insn->id == X86_INS_FXRSTOR ||
                       insn->id == X86_INS_FXRSTOR64 || insn->id == X86_INS_XSAVE ||
                       insn->id == X86_INS_XSAVE64 || insn->id == X86_INS_XSAVEOPT ||
                       insn->id == X86_INS_XSAVEOPT64 || insn->id == X86_INS_XSAVEC ||
                       insn->id == X86_INS_XRSTOR || insn->id == X86_INS_XRSTOR64;
      info.simd_flags = d.fp && (x87 || SetsSimdFlags(insn->mnemonic));
      info.native = info.rep || UndefinedFlags(insn->id) || info.simd_flags;
      for (std::uint8_t i = 0; i < insn->detail->x86.op_count; ++i) {
        if (insn->detail->x86.operands[i].type == X86_OP_MEM) info.memory = true;
      }
      info.memory = info.memory || info.rep;
      info.in_process =
          !info.rep && !info.simd_flags && UndefinedFlags(insn->id) && NativeInsn::Suitable(*insn);
      if (info.in_process) {
        info.bytes.assign(bytes, bytes + n);
        const Mapping* m = space_.Find(pc);
        info.writable = !m || m->write;
      }
      cs_free(insn, 1);
    }
    it = info_.emplace(pc, info).first;
  }
  const PcInfo* d = &it->second;
  pending_ = true;
  pending_pc_ = pc;
  pending_size_ = static_cast<std::uint8_t>(size);
  pending_fp_ = d->fp;
  pending_rep_ = d->rep;
  if (d->in_process) {
    pending_ = false;
    std::uint64_t v[kHot];
    std::memcpy(v, gpr_, sizeof v);
    if (native_.Run(pc, d->bytes, v)) {
      ++in_process_steps_;
      changes_.clear();
      FinishNative(pc, static_cast<std::uint8_t>(size), v, pc + size);
      return;
    }
  }
  if (d->native) {
    // Executed by the CPU rather than the emulator (see NativeStep()).
    pending_ = false;
    ++native_steps_;
    if (core::Status s = NativeStep(pc, static_cast<std::uint8_t>(size), d->simd_flags, d->memory);
        !s.ok())
      Halt(std::move(s));
    return;
  }
  if (d->rdtsc || d->rdtscp) {
    // Deterministic: a counter, not the host's TSC.
    const std::uint64_t tsc =
        next_tsc_ < emu_.rdtsc.size() ? emu_.rdtsc[next_tsc_++] : (result_.instructions + 1) * 16;
    std::uint64_t lo = tsc & 0xffffffff, hi = tsc >> 32, aux = 0, next = pc + size;
    uc_reg_write(uc_, UC_X86_REG_RAX, &lo);
    uc_reg_write(uc_, UC_X86_REG_RDX, &hi);
    if (d->rdtscp) uc_reg_write(uc_, UC_X86_REG_RCX, &aux);
    uc_reg_write(uc_, UC_X86_REG_RIP, &next);  // skips the instruction
  }
}

// Runs the instruction at pc on the real CPU, in the tracee, instead of in
// the emulator, and takes its results: for instructions that leave flags
// "undefined" (QEMU and the CPU set them differently) and rep string
// instructions (the CPU single-steps them in chunks of iterations, QEMU one
// iteration at a time), so that the trace matches the ptrace engine's.
// Cost: a page sync and one ptrace step (~20 us).
core::Status EmuSession::NativeStep(core::Address pc, std::uint8_t size, bool simd, bool memory) {
  if (memory) {
    if (core::Status s = SyncDirty(); !s.ok()) return s;
  }
  if (simd) {
    // The emulator's x87/SSE state into the tracee (FXSAVE layout).
    fp_slots_ = slots_;
    CollectFp(&fp_slots_);
    if (ptrace(PTRACE_SETFPREGS, tracee_.pid(), nullptr, xstate_.data()) != 0)
      return core::Status::IOError("PTRACE_SETFPREGS: " + std::string(std::strerror(errno)));
  }
  user_regs_struct before = tracee_regs_;
  before.rax = gpr_[0], before.rbx = gpr_[1], before.rcx = gpr_[2], before.rdx = gpr_[3];
  before.rsi = gpr_[4], before.rdi = gpr_[5], before.rbp = gpr_[6], before.rsp = gpr_[7];
  before.r8 = gpr_[8], before.r9 = gpr_[9], before.r10 = gpr_[10], before.r11 = gpr_[11];
  before.r12 = gpr_[12], before.r13 = gpr_[13], before.r14 = gpr_[14], before.r15 = gpr_[15];
  before.eflags = gpr_[16], before.fs_base = gpr_[kFsBaseSlot];
  before.gs_base = gpr_[kGsBaseSlot];
  before.rip = pc;
  if (core::Status s = tracee_.SetRegs(before); !s.ok()) return s;
  core::Expected<Stop> stop = tracee_.Step();
  if (!stop.ok()) return stop.status();
  if (stop->kind == Stop::kSignal && stop->signal == SIGINT) {  // Ctrl-C
    result_.end = RecordResult::End::kInterrupted;
    Halt(core::Status::Ok());
    return core::Status::Ok();
  }
  if (stop->kind == Stop::kSignal) {
    // The instruction faulted on the CPU (not run): the kernel delivers the signal.
    user_regs_struct at{};
    if (tracee_.GetRegs(&at).ok() && at.rip == pc) return DeliverFault(stop->signal);
  }
  user_regs_struct after{};
  if (stop->kind != Stop::kStepped || !tracee_.GetRegs(&after).ok() ||
      (after.rip != pc && after.rip != pc + size)) {
    return core::Status::Unsupported("the instruction at " + Hex(pc) +
                                     " faulted on the CPU (a signal): not supported by the emu "
                                     "engine");
  }
  // Memory it wrote: the ptrace engine's rules (insn_decoder.h).
  const Decoded* d = decoder_.Find(pc);
  ranges_.clear();
  if (d) InsnDecoder::Writes(*d, before, after, &ranges_);
  data_.clear();
  spans_.clear();
  for (const Range& r : ranges_) {
    std::vector<std::uint8_t> bytes(r.size);
    const std::size_t n = tracee_.ReadMemory(r.start, bytes);
    if (n == 0) continue;
    space_.Note(r.start, std::span(bytes).first(n));
    uc_mem_write(uc_, r.start, bytes.data(), n);
    AddWrite(r.start, bytes.data(), n);
  }
  after.eflags &= ~(kTf | kRf);
  changes_.clear();
  if (simd) {
    if (core::Status s = LoadFpFromTracee(); !s.ok()) return s;
    fp_slots_ = slots_;
    CollectFp(&fp_slots_);
    DiffRegisters(layout_, slots_, fp_slots_, layout_.gpr_count(), layout_.count(), &changes_);
    slots_.swap(fp_slots_);
  }
  const std::uint64_t v[kHot] = {after.rax, after.rbx, after.rcx, after.rdx, after.rsi,   after.rdi,
                                 after.rbp, after.rsp, after.r8,  after.r9,  after.r10,   after.r11,
                                 after.r12, after.r13, after.r14, after.r15, after.eflags};
  FinishNative(pc, size, v, after.rip);
  return core::Status::Ok();
}

// The tracee stopped with `sig`, raised by the instruction at its rip (run
// there by NativeStep with the emulator's state): the kernel delivers it as
// it would to the program, and the trace records the delivery as the ptrace
// engine does (a signal event: the frame, every register it changed, the
// handler's address). A signal without a handler ends the program.
core::Status EmuSession::DeliverFault(int sig) {
  // The kernel's siginfo_t, read at the signal stop before it is delivered.
  std::array<std::uint8_t, 128> siginfo{};
  ptrace(PTRACE_GETSIGINFO, tracee_.thread(), nullptr, siginfo.data());
  core::Expected<Stop> stop = tracee_.Step(sig);
  if (!stop.ok()) return stop.status();
  if (stop->kind == Stop::kExited || stop->kind == Stop::kKilled) {
    const bool exited = stop->kind == Stop::kExited;
    result_.end = exited ? RecordResult::End::kExited : RecordResult::End::kKilled;
    result_.exit_code = stop->exit_code;
    result_.signal = stop->signal;
    done_ = true;
    uc_emu_stop(uc_);
    return core::Status::Ok();
  }
  if (stop->kind != Stop::kStepped) {
    return core::Status::Unsupported("another signal or event arrived while signal " +
                                     std::to_string(sig) +
                                     " was delivered: not supported by the emu engine");
  }
  user_regs_struct after{};
  if (core::Status s = tracee_.GetRegs(&after); !s.ok()) return s;
  // The frame's saved rflags carry the TF of the step: the program never sees it.
  if (core::Status s = ClearStepFlagsInSignalFrame(tracee_, after.rsp); !s.ok()) return s;
  after.eflags &= ~(kTf | kRf);
  // The frame: every byte of writable memory that changed, into Unicorn too.
  data_.clear();
  spans_.clear();
  ranges_.clear();
  ++result_.full_diffs;
  space_.Diff(tracee_, &ranges_);
  Capture(ranges_);
  changes_.clear();
  if (core::Status s = LoadFpFromTracee(); !s.ok()) return s;
  fp_slots_ = slots_;
  CollectFp(&fp_slots_);
  DiffRegisters(layout_, slots_, fp_slots_, layout_.gpr_count(), layout_.count(), &changes_);
  slots_.swap(fp_slots_);
  WriteGprs(after);
  const std::uint64_t v[kHot] = {after.rax, after.rbx, after.rcx, after.rdx, after.rsi,   after.rdi,
                                 after.rbp, after.rsp, after.r8,  after.r9,  after.r10,   after.r11,
                                 after.r12, after.r13, after.r14, after.r15, after.eflags};
  DiffHot(v);
  BuildWrites();
  sink_.OnSignal({sig, after.rip, siginfo, changes_, writes_});
  ++result_.signals;
  data_.clear();
  spans_.clear();
  std::uint64_t rip = after.rip;
  uc_reg_write(uc_, UC_X86_REG_RIP, &rip);
  return core::Status::Ok();
}

// The tracee's x87/SSE state into Unicorn (after the CPU or the kernel
// changed it: a natively run instruction, a signal's delivery, rt_sigreturn).
core::Status EmuSession::LoadFpFromTracee() {
  user_fpregs_struct fp{};
  if (ptrace(PTRACE_GETFPREGS, tracee_.pid(), nullptr, &fp) != 0)
    return core::Status::IOError("PTRACE_GETFPREGS: " + std::string(std::strerror(errno)));
  std::uint32_t mxcsr = fp.mxcsr;
  uc_reg_write(uc_, UC_X86_REG_MXCSR, &mxcsr);
  for (int i = 0; i < 16; ++i) uc_reg_write(uc_, UC_X86_REG_XMM0 + i, &fp.xmm_space[4 * i]);
  // x87: control, status (with TOP), tags, the physical registers, pointers.
  std::uint16_t fcw = static_cast<std::uint16_t>(fp.cwd), fsw = static_cast<std::uint16_t>(fp.swd);
  uc_reg_write(uc_, UC_X86_REG_FPCW, &fcw);
  uc_reg_write(uc_, UC_X86_REG_FPSW, &fsw);
  const auto* st = reinterpret_cast<const std::uint8_t*>(fp.st_space);
  std::uint16_t tag = FullTagWord(static_cast<std::uint8_t>(fp.ftw), fsw, st);
  uc_reg_write(uc_, UC_X86_REG_FPTAG, &tag);
  const unsigned top = (fsw >> 11) & 7;
  for (unsigned i = 0; i < 8; ++i) {
    std::uint8_t reg[16] = {};
    std::memcpy(reg, st + 16 * i, 10);
    uc_reg_write(uc_, UC_X86_REG_FP0 + static_cast<int>((top + i) & 7), reg);
  }
  x87_fop_ = fp.fop;
  x87_fip_ = fp.rip;
  x87_fdp_ = fp.rdp;
  return core::Status::Ok();
}

void EmuSession::FinishNative(core::Address pc, std::uint8_t size, const std::uint64_t* v,
                              core::Address rip) {
  {
    user_regs_struct r = tracee_regs_;
    r.rax = v[0], r.rbx = v[1], r.rcx = v[2], r.rdx = v[3], r.rsi = v[4], r.rdi = v[5];
    r.rbp = v[6], r.rsp = v[7], r.r8 = v[8], r.r9 = v[9], r.r10 = v[10], r.r11 = v[11];
    r.r12 = v[12], r.r13 = v[13], r.r14 = v[14], r.r15 = v[15], r.eflags = v[16];
    WriteGprs(r);
  }
  DiffHot(v);
  BuildWrites();
  sink_.OnInstruction({pc, size, changes_, writes_, {}});
  ++result_.instructions;
  data_.clear();
  spans_.clear();
  // Continue after it (or at it, for the rest of a rep): writing rip makes
  // Unicorn leave the translated block before executing the instruction.
  std::uint64_t next = rip;
  uc_reg_write(uc_, UC_X86_REG_RIP, &next);
}

// ---------------------------------------------------------------- system calls

core::Status EmuSession::SyncDirty() {
  page_.resize(kPage);
  for (std::uint64_t page : dirty_) {
    const core::Address a = page * kPage;
    if (uc_mem_read(uc_, a, page_.data(), kPage) != UC_ERR_OK) continue;  // unmapped since
    if (core::Status s = tracee_.WriteMemory(a, page_); !s.ok()) {
      return core::Status::IOError("emulator: cannot update the program's page " + Hex(a) + ": " +
                                   s.message());
    }
    space_.Note(a, page_);
  }
  dirty_.clear();
  dirty_set_.clear();
  last_dirty_ = ~std::uint64_t{0};
  return core::Status::Ok();
}

void EmuSession::Capture(std::span<const Range> ranges) {
  for (const Range& r : ranges) {
    std::vector<std::uint8_t> bytes(r.size);
    const std::size_t n = tracee_.ReadMemory(r.start, bytes);
    if (n == 0) continue;
    bytes.resize(n);
    space_.Note(r.start, bytes);
    uc_mem_write(uc_, r.start, bytes.data(), n);
    AddWrite(r.start, bytes.data(), n);
  }
}

core::Status EmuSession::ApplyMapChanges(const MapChanges& maps) {
  for (const Mapping& m : maps.unmapped) {
    if (m.name == "[vsyscall]") continue;
    if (uc_err e = uc_mem_unmap(uc_, m.start, m.size); e != UC_ERR_OK) {
      return core::Status::IOError("emulator: cannot unmap " + Hex(m.start) + "+" + Hex(m.size) +
                                   " (" + uc_strerror(e) + ")");
    }
  }
  for (const Mapping& m : maps.mapped) {
    if (m.name == "[stack]" && stack_low_ && m.end() <= stack_low_ + kMaxStackGrowth + kPage) {
      // The stack the emulator grew (GrowStack) now shows in /proc/PID/maps:
      // already mapped, except what lies below.
      if (m.start < stack_low_) {
        Mapping below = m;
        below.size = std::min(m.end(), stack_low_) - m.start;
        if (core::Status s = MapInto(below, true); !s.ok()) return s;
        stack_low_ = m.start;
      }
      continue;
    }
    if (core::Status s = MapInto(m, true); !s.ok()) return s;
  }
  for (const Mapping& m : maps.reprotected) {
    if (uc_err e = uc_mem_protect(uc_, m.start, m.size, UcProt(m)); e != UC_ERR_OK) {
      return core::Status::IOError("emulator: cannot change the protection of " + Hex(m.start) +
                                   "+" + Hex(m.size) + " (" + uc_strerror(e) + ")");
    }
  }
  return core::Status::Ok();
}

void EmuSession::OnSyscall() {
  if (done_) return;
  if (core::Status s = ProxySyscall(); !s.ok()) Halt(std::move(s));
}

core::Status EmuSession::ProxySyscall() {
  // The code hook of this `syscall` ran: it is pending and is emitted here.
  pending_ = false;
  const core::Address pc = pending_pc_;
  const std::uint8_t size = pending_size_;
  user_regs_struct before = EmulatorRegs();
  before.rip = pc;
  if (core::Status s = SyncDirty(); !s.ok()) return s;
  data_.clear();
  spans_.clear();
  const std::uint64_t nr = before.rax;
  const std::uint64_t args[6] = {before.rdi, before.rsi, before.rdx,
                                 before.r10, before.r8,  before.r9};
  SyscallRecord sys;
  sys.number = static_cast<std::uint32_t>(nr);
  std::copy(std::begin(args), std::end(args), sys.args);
  user_regs_struct after = before;
  MapChanges maps;
  if (nr == kSysRseq) {
    // As the ptrace engine: the kernel would write the rseq area behind the trace's back.
    after.rax = static_cast<std::uint64_t>(-ENOSYS);
  } else {
    const bool forks = CreatesProcess(tracee_, nr, args);
    if (forks) {
      // The child starts from the tracee's state: the emulator's x87/SSE too.
      fp_slots_ = slots_;
      CollectFp(&fp_slots_);
      if (ptrace(PTRACE_SETFPREGS, tracee_.pid(), nullptr, xstate_.data()) != 0)
        return core::Status::IOError("PTRACE_SETFPREGS: " + std::string(std::strerror(errno)));
    }
    if (core::Status s = tracee_.SetRegs(before); !s.ok()) return s;
    // Native recordings' hook (EmuOptions::syscalls): the log answers.
    core::Expected<Stop> stop =
        emu_.syscalls ? emu_.syscalls->Answer(tracee_, before) : tracee_.Step();
    while (stop.ok() && stop->kind == Stop::kEvent && forks && stop->event != PTRACE_EVENT_EXEC &&
           options_.follow == RecordOptions::Follow::kParent) {
      // The child runs untraced, as without the recorder (untraced.h); the
      // parent's system call goes on (vfork: until the child execs or exits).
      unsigned long msg = 0;
      ptrace(PTRACE_GETEVENTMSG, tracee_.pid(), nullptr, &msg);
      const pid_t child = static_cast<pid_t>(msg);
      if (core::Status s = tracee_.WaitNewThread(child); !s.ok()) return s;
      if (core::Status s = Untrace(tracee_, child, pc, traps_); !s.ok()) return s;
      if (core::Status s = tracee_.Detach(child); !s.ok()) return s;
      stop = tracee_.Step();
    }
    while (stop.ok() && stop->kind == Stop::kSignal && Discarded(tracee_.pid(), stop->signal)) {
      // SIGCHLD and the like: not delivered to the program. It came before
      // the system call ran or after it completed; if it interrupted it, the
      // next step restarts it.
      user_regs_struct now{};
      if (core::Status s = tracee_.GetRegs(&now); !s.ok()) return s;
      if (now.rip != pc && !Restarts(now.rax)) {
        stop = Stop();  // stepped: the signal is dropped when the tracee resumes
        break;
      }
      stop = tracee_.Step();
    }
    if (!stop.ok()) return stop.status();
    switch (stop->kind) {
      case Stop::kStepped:
        break;
      case Stop::kExited:
      case Stop::kKilled: {
        sink_.OnInstruction({pc, size, {}, {}, {}});
        sys.result = 0;
        sink_.OnSyscall(sys);
        ++result_.instructions;
        ++result_.syscalls;
        const bool exited = stop->kind == Stop::kExited;
        result_.end = exited ? RecordResult::End::kExited : RecordResult::End::kKilled;
        result_.exit_code = stop->exit_code;
        result_.signal = stop->signal;
        done_ = true;
        uc_emu_stop(uc_);
        return core::Status::Ok();
      }
      case Stop::kSignal:
        if (stop->signal == SIGINT) {
          result_.end = RecordResult::End::kInterrupted;
          done_ = true;
          uc_emu_stop(uc_);
          return core::Status::Ok();
        }
        return core::Status::Unsupported(
            "the program received signal " + std::to_string(stop->signal) + " in system call " +
            std::to_string(nr) + ": signals are not supported by the emu engine");
      case Stop::kEvent: {
        unsigned long msg = 0;
        ptrace(PTRACE_GETEVENTMSG, tracee_.pid(), nullptr, &msg);
        if (stop->event != PTRACE_EVENT_EXEC && msg != 0) kill(static_cast<pid_t>(msg), SIGKILL);
        if (stop->event == PTRACE_EVENT_EXEC)
          return core::Status::Unsupported(
              "the program calls execve: not supported by the emu engine");
        if (stop->event == PTRACE_EVENT_CLONE)
          return core::Status::Unsupported(
              "the program creates a thread (clone): not supported by the emu engine");
        return core::Status::Unsupported(
            "the program creates a process (fork/vfork): following the child is not supported "
            "by the emu engine (--follow parent records the parent)");
      }
    }
    if (core::Status s = tracee_.GetRegs(&after); !s.ok()) return s;
  }
  const bool sigreturn = nr == kSysRtSigreturn && after.rip != pc + size;
  if (sigreturn) {
    // Every register comes back from the signal frame, rip and x87/SSE too.
    after.eflags &= ~(kTf | kRf);
    if (core::Status s = LoadFpFromTracee(); !s.ok()) return s;
    resume_at_ = after.rip;
    uc_emu_stop(uc_);
  } else {
    after.r11 = before.eflags & ~(kTf | kRf);
    after.rcx = pc + size;
  }
  sys.result = after.rax;
  const bool failed = after.rax > ~std::uint64_t{4095};
  if (ChangesMappings(nr) && !failed) {
    std::vector<Range> fresh;
    const auto pages = [](std::uint64_t n) { return (n + kPage - 1) / kPage * kPage; };
    if (nr == kSysMmap) fresh.push_back({after.rax, pages(args[1])});
    if (nr == kSysMremap) fresh.push_back({after.rax, pages(args[2])});
    if (core::Status s = space_.Update(tracee_, fresh, &maps); !s.ok()) return s;
    if (core::Status s = ApplyMapChanges(maps); !s.ok()) return s;
    decoder_.Invalidate();
    info_.clear();
    // New mappings' contents for the trace: the non-zero runs, as the ptrace engine.
    for (const Range& c : maps.contents) {
      std::vector<std::uint8_t> buf(c.size);
      tracee_.ReadMemoryZeroFill(c.start, buf);
      ForEachNonZeroRun(buf, [&](std::size_t offset, std::size_t length) {
        AddWrite(c.start + offset, buf.data() + offset, length);
      });
    }
  }
  if (nr == kSysGetrandom && !failed && next_random_ < emu_.getrandom.size()) {
    const std::vector<std::uint8_t>& given = emu_.getrandom[next_random_++];
    const std::size_t n = std::min<std::size_t>(given.size(), after.rax);
    if (core::Status s = tracee_.WriteMemory(args[0], std::span(given).first(n)); !s.ok()) return s;
  }
  ranges_.clear();
  if (KnownOutputs(nr, args, after.rax, &ranges_)) {
    Capture(ranges_);
  } else {
    ++result_.full_diffs;
    ranges_.clear();
    space_.Diff(tracee_, &ranges_);
    Capture(ranges_);
  }
  // Registers: the kernel's rax, rcx, r11 (and fs/gs base for arch_prctl).
  WriteGprs(after);
  std::uint64_t fs = after.fs_base, gs = after.gs_base;
  uc_reg_write(uc_, UC_X86_REG_FS_BASE, &fs);
  uc_reg_write(uc_, UC_X86_REG_GS_BASE, &gs);
  std::uint64_t v[kHot];
  ReadHot(v);
  changes_.clear();
  auto set = [&](std::size_t slot, std::uint64_t value) {
    if (gpr_[slot] == value) return;
    gpr_[slot] = value;
    core::RegisterWrite& w = changes_.emplace_back();
    w.reg = slots_[slot].reg;
    std::memcpy(w.value, &value, 8);
    std::memcpy(slots_[slot].value, &value, 8);
  };
  for (std::size_t i = 0; i < kHot; ++i) set(i, v[i]);
  set(kFsBaseSlot, after.fs_base);
  set(kGsBaseSlot, after.gs_base);
  // FP state: unchanged by the kernel (but for rt_sigreturn), diffed here as
  // the ptrace engine does after every syscall (catches anything the decoder
  // missed).
  fp_slots_ = slots_;
  CollectFp(&fp_slots_);
  const std::size_t before_fp = changes_.size();
  DiffRegisters(layout_, slots_, fp_slots_, layout_.gpr_count(), layout_.count(), &changes_);
  if (!sigreturn) result_.missed_registers += changes_.size() - before_fp;
  slots_.swap(fp_slots_);

  BuildWrites();
  sink_.OnInstruction({pc, size, {}, {}, {}});
  sys.writes = writes_;
  sys.registers = changes_;
  sys.unmapped = maps.unmapped;
  sys.mapped = maps.mapped;
  sys.protected_ = maps.reprotected;
  sink_.OnSyscall(sys);
  ++result_.instructions;
  ++result_.syscalls;
  data_.clear();
  spans_.clear();
  return core::Status::Ok();
}

// ---------------------------------------------------------------- run

core::Status EmuSession::Run() {
  while (!done_) {
    std::uint64_t rip = 0;
    uc_reg_read(uc_, UC_X86_REG_RIP, &rip);
    const uc_err e = uc_emu_start(uc_, rip, 0, 0, 0);
    if (done_) break;
    if (resume_at_) {
      // After rt_sigreturn: where the signal interrupted the program.
      std::uint64_t at = *resume_at_;
      resume_at_.reset();
      uc_reg_write(uc_, UC_X86_REG_RIP, &at);
      continue;
    }
    const bool fault = e == UC_ERR_READ_UNMAPPED || e == UC_ERR_WRITE_UNMAPPED ||
                       e == UC_ERR_FETCH_UNMAPPED || e == UC_ERR_READ_PROT ||
                       e == UC_ERR_WRITE_PROT || e == UC_ERR_FETCH_PROT;
    const bool grows_stack =
        stack_low_ && fault_address_ < stack_low_ && fault_address_ + kMaxStackGrowth >= stack_low_;
    if (pending_ && ((fault && !grows_stack) || e == UC_ERR_INSN_INVALID)) {
      // A fault, or an instruction TCG lacks: the CPU runs it in the tracee
      // with the emulator's state; a fault there is delivered as a signal.
      pending_ = false;
      ++native_steps_;
      // The hook's size is TCG's, short for an instruction it cannot decode.
      std::uint8_t bytes[15] = {};
      std::size_t n = sizeof bytes;
      while (n > 0 && uc_mem_read(uc_, pending_pc_, bytes, n) != UC_ERR_OK) --n;
      const Decoded& d = decoder_.Decode(pending_pc_, std::span<const std::uint8_t>(bytes, n));
      const std::uint8_t size = d.size ? d.size : pending_size_;
      if (core::Status s = NativeStep(pending_pc_, size, true, true); !s.ok()) {
        error_ = std::move(s);
        break;
      }
      continue;
    }
    if (e != UC_ERR_OK) {
      std::uint8_t bytes[15] = {};
      std::size_t n = 15;
      while (n > 0 && uc_mem_read(uc_, pending_pc_, bytes, n) != UC_ERR_OK) --n;
      std::string hex;
      for (std::size_t i = 0; i < n && i < pending_size_ + 0u; ++i) {
        char b[4];
        std::snprintf(b, sizeof b, "%02x ", bytes[i]);
        hex += b;
      }
      if (!hex.empty()) hex.pop_back();
      pending_ = false;
      if (grows_stack) {
        error_ = core::Status::Unsupported("the program's stack could not grow to " +
                                           Hex(fault_address_) + " (at " + Hex(pending_pc_) + ")");
        break;
      }
      error_ = core::Status::Unsupported(
          std::string(fault ? "the program faulted"
                            : "the emulator cannot execute the instruction") +
          " at " + Hex(pending_pc_) + " (" + hex + "): " + uc_strerror(e) +
          (fault ? " (a signal: not supported by the emu engine)" : ""));
      break;
    }
    // uc_emu_start returned without a reason (stopped at address 0?).
    if (!done_) {
      error_ = core::Status::Unsupported("the program jumped to address 0");
      break;
    }
  }
  if (tracee_.alive()) tracee_.Kill();
  if (getenv("BACKSTEP_RECORD_DEBUG")) {
    std::fprintf(stderr, "record(emu): %llu instructions run in the tracee, %llu in-process\n",
                 static_cast<unsigned long long>(native_steps_),
                 static_cast<unsigned long long>(in_process_steps_));
  }
  return error_;
}

}  // namespace

bool EmulatorAvailable() { return true; }

core::Expected<RecordResult> RecordEmulated(const RecordOptions& options, RecordingSink& sink,
                                            const EmuOptions& emu) {
  core::Expected<Tracee> tracee = Tracee::Spawn(options.spawn);
  if (!tracee.ok()) return tracee.status();
  EmuSession session(options, emu, sink, std::move(*tracee));
  return RunSession(session, sink);
}

}  // namespace backstep::record
