// EmuSession: the emulation engine's recording (emu_recorder.h describes
// what it records and refuses), one class over several files:
//   emu_start.cc        Start: the shared start-up (session_start.h), then
//                       the image and registers into Unicorn, the hooks;
//   emu_registers.cc    registers between Unicorn, the tracee and the
//                       trace's slots (GPRs in one batch, x87/SSE state);
//   emu_hooks.cc        the Unicorn callbacks (writes, cpuid, interrupts,
//                       unmapped memory and the stack's growth);
//   emu_instruction.cc  per instruction: Retire the previous one, classify
//                       the next (emu_classify.h) and pick who runs it;
//   emu_native.cc       instructions the CPU runs in the tracee, and the
//                       signals their faults raise (signal_delivery.h);
//   emu_syscall.cc      system calls, run by the tracee with the
//                       emulator's dirty pages pushed into it first;
//   emu_recorder.cc     Run (uc_emu_start until the end) and RecordEmulated.
// Shared with the other engines: start-up (session_start.h), signal
// delivery (signal_delivery.h, signal_disposition.h) and write capture
// (write_capture.h).
//
// Thread-safety: one recording per thread (ptrace is per-thread).
#pragma once

#include <capstone/capstone.h>
#include <sys/user.h>
#include <unicorn/unicorn.h>

#include <cstdint>
#include <optional>
#include <span>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "backstep/core/expected.h"
#include "recorder/address_space.h"
#include "recorder/cpu_state.h"
#include "recorder/emu/emu_classify.h"
#include "recorder/emu/emu_recorder.h"
#include "recorder/emu/native_flags.h"
#include "recorder/insn_decoder.h"
#include "recorder/recorder.h"
#include "recorder/recording_sink.h"
#include "recorder/tracee.h"
#include "recorder/untraced.h"
#include "recorder/write_capture.h"

namespace backstep::record {

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
  // Constants and helpers every part uses.
  static constexpr std::uint64_t kPage = 4096;
  static constexpr std::uint64_t kTf = 1u << 8, kRf = 1u << 16;
  static constexpr std::size_t kGprs = CpuLayout::kGprSlots;
  // The GPRs read after every instruction, in CpuLayout's slot order (rax ..
  // r15, eflags); selectors and fs/gs base change only in system calls.
  static constexpr int kHotRegs[] = {
      UC_X86_REG_RAX, UC_X86_REG_RBX,   UC_X86_REG_RCX, UC_X86_REG_RDX, UC_X86_REG_RSI,
      UC_X86_REG_RDI, UC_X86_REG_RBP,   UC_X86_REG_RSP, UC_X86_REG_R8,  UC_X86_REG_R9,
      UC_X86_REG_R10, UC_X86_REG_R11,   UC_X86_REG_R12, UC_X86_REG_R13, UC_X86_REG_R14,
      UC_X86_REG_R15, UC_X86_REG_RFLAGS};
  static constexpr std::size_t kHot = sizeof kHotRegs / sizeof kHotRegs[0];
  static_assert(kHot == CpuLayout::kEflagsSlot + 1, "kHotRegs follows CpuLayout's GPR slots");
  static constexpr std::size_t kFsBaseSlot = CpuLayout::kFsBaseSlot,
                               kGsBaseSlot = CpuLayout::kGsBaseSlot;
  static constexpr std::uint64_t kSysRtSigreturn = 15;
  static constexpr std::uint64_t kMaxStackGrowth = 8u << 20;  // the default RLIMIT_STACK

  static std::uint32_t UcProt(const Mapping& m) {
    return (m.read ? UC_PROT_READ : 0) | (m.write ? UC_PROT_WRITE : 0) |
           (m.exec ? UC_PROT_EXEC : 0);
  }

  static bool Unreadable(const Mapping& m) { return m.name.rfind("[vvar", 0) == 0; }

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
  // A `syscall` (pending): run by the tracee (StepSyscall), its effects
  // recorded (RecordSyscall), or the end of the program (SyscallEnded).
  core::Status ProxySyscall();
  core::Expected<Stop> StepSyscall(core::Address pc, const user_regs_struct& before);
  core::Status SyscallEnded(core::Address pc, std::uint8_t size, const Stop& stop,
                            SyscallRecord* sys);
  core::Status RecordSyscall(core::Address pc, std::uint8_t size, const user_regs_struct& before,
                             user_regs_struct after, SyscallRecord* sys);
  // The other recording's signals without effect due before the instruction
  // at `pc` (EmuOptions::quiet_signals), recorded (emu_given.cc).
  void GiveQuietSignals(core::Address pc);
  // The kernel's registers after a system call into Unicorn, changes_ and slots_.
  void SyscallRegisters(const user_regs_struct& after, bool sigreturn);
  // Emits the pending instruction (registers read after it).
  void Retire();
  core::Status NativeStep(core::Address pc, std::uint8_t size, bool simd, bool memory);
  // Delivers `sig` (emu_native.cc) and sets Unicorn's rip to the handler,
  // or (`in_hook`: inside Unicorn's syscall hook, where writing rip makes
  // Unicorn go on at it plus the `syscall`'s length at once) stores the
  // handler there for the run loop instead.
  core::Status DeliverFault(int sig, std::optional<core::Address>* in_hook = nullptr);
  // A signal the SyscallSource says the recorded run got as the system call
  // just recorded returned: delivered now (DeliverFault), its siginfo first.
  core::Status DeliverAfterSyscall(const SyscallSource::SignalAfter& signal);
  core::Status LoadFpFromTracee();
  // Emits a natively run instruction's event (GPRs after: v; writes in
  // writes_; FP changes already in changes_) and continues at rip.
  void FinishNative(core::Address pc, std::uint8_t size, const std::uint64_t* v, core::Address rip);
  void Halt(core::Status why);
  void ReadHot(std::uint64_t* values);
  // The hot registers (kHotRegs's order) of `r` into v[kHot], and back.
  static void HotFrom(const user_regs_struct& r, std::uint64_t* v);
  static void HotInto(const std::uint64_t* v, user_regs_struct* r);
  // Fills slots_[gpr_count, count) from Unicorn's x87/SSE state.
  void CollectFp(std::vector<core::RegisterWrite>* slots);
  // Start (emu_start.cc).
  core::Status PlaceAtRandom(std::span<const std::uint8_t> auxv);
  core::Status OpenEmulator();
  core::Status LoadRegisters();
  void AddHooks();
  core::Status MapInto(const Mapping& m, bool with_contents);
  core::Status SyncDirty();
  void Capture(std::span<const Range> ranges);
  core::Status ApplyMapChanges(const MapChanges& maps);
  void WriteGprs(const user_regs_struct& r);
  user_regs_struct EmulatorRegs();
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
  bool pending_rep_ = false;  // a rep string instruction (QEMU: a hook per iteration)
  GivenAnswers given_{
      GivenInputs{emu_.getrandom, emu_.kernel_answers, emu_.random_reads, emu_.file_stats}};
  std::size_t next_quiet_signal_ = 0;  // into emu_.quiet_signals
  std::size_t next_tsc_ = 0;           // into emu_.rdtsc
  std::uint64_t native_steps_ = 0, in_process_steps_ = 0;
  core::Address fault_address_ = 0;
  Traps traps_;  // what the tracee has set up (undone in forked children)
  // Where to go on after rt_sigreturn (set in the syscall hook, which cannot move rip).
  std::optional<core::Address> resume_at_;
  core::Address stack_low_ = 0;  // the stack mapping's start (grows down)
  std::uint16_t x87_fop_ = 0;    // the last x87 instruction's (from the CPU)
  std::uint64_t x87_fip_ = 0, x87_fdp_ = 0;
  NativeInsn native_;

  std::unordered_map<core::Address, PcInfo> info_;  // by pc; cleared with the decoder's cache
  csh capstone_ = 0;

  // Writes of the pending instruction (contiguous pieces merge: the write
  // hook reports a store piece by piece).
  WriteBuffer writes_{/*merge_contiguous=*/true};
  std::vector<Range> ranges_;
  std::vector<Range> wide_;  // writes wider than 8 bytes (value not given by the hook)

  // Pages written since the last system call (to push into the tracee).
  std::vector<std::uint64_t> dirty_;
  std::unordered_set<std::uint64_t> dirty_set_;
  std::uint64_t last_dirty_ = ~std::uint64_t{0};
  std::vector<std::uint8_t> page_;
};

}  // namespace backstep::record
