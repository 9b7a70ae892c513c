// Instructions the emulation engine has the CPU run, in the tracee, and
// the signals their faults raise (emu_session.h).
#include <signal.h>
#include <sys/ptrace.h>

#include <cerrno>
#include <cstring>
#include <string>

#include "backstep/core/hex.h"
#include "recorder/emu/emu_session.h"
#include "recorder/run_session.h"
#include "recorder/signal_delivery.h"

namespace backstep::record {

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
  HotInto(gpr_, &before);
  before.fs_base = gpr_[kFsBaseSlot];
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
    return core::Status::Unsupported("the instruction at " + core::HexU64(pc) +
                                     " faulted on the CPU (a signal): not supported by the emu "
                                     "engine");
  }
  // Memory it wrote: the ptrace engine's rules (insn_decoder.h).
  const Decoded* d = decoder_.Find(pc);
  ranges_.clear();
  if (d) InsnDecoder::Writes(*d, before, after, &ranges_);
  writes_.Clear();
  for (const Range& r : ranges_) {
    std::vector<std::uint8_t> bytes(r.size);
    const std::size_t n = tracee_.ReadMemory(r.start, bytes);
    if (n == 0) continue;
    space_.Note(r.start, std::span(bytes).first(n));
    uc_mem_write(uc_, r.start, bytes.data(), n);
    writes_.Add(r.start, std::span<const std::uint8_t>(bytes.data(), n));
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
  std::uint64_t v[kHot];
  HotFrom(after, v);
  FinishNative(pc, size, v, after.rip);
  return core::Status::Ok();
}

// The tracee stopped with `sig`, raised by the instruction at its rip (run
// there by NativeStep with the emulator's state): the kernel delivers it as
// it would to the program, and the trace records the delivery as the ptrace
// engine does (a signal event: the frame, every register it changed, the
// handler's address). A signal without a handler ends the program (a
// delivery event without effects, then the end).
core::Status EmuSession::DeliverFault(int sig, std::optional<core::Address>* in_hook) {
  // The kernel's siginfo_t, read at the signal stop before it is delivered.
  const std::array<std::uint8_t, 128> siginfo = ReadSigInfo(tracee_);
  user_regs_struct at{};
  if (core::Status s = tracee_.GetRegs(&at); !s.ok()) return s;
  core::Expected<SignalDelivery> delivery = DeliverSignal(tracee_, sig);
  if (!delivery.ok()) return delivery.status();
  switch (delivery->outcome) {
    case SignalDelivery::Outcome::kEnded:
      if (delivery->stop.kind == Stop::kKilled) {
        // A fatal signal: a delivery without effects where it was raised,
        // as the ptrace engine records it (a debugger stops there with the
        // signal, as on the live process), then the end.
        sink_.OnSignal({sig, at.rip, siginfo, {}, {}});
        ++result_.signals;
      }
      SetProgramEnd(delivery->stop, &result_);
      done_ = true;
      uc_emu_stop(uc_);
      return core::Status::Ok();
    case SignalDelivery::Outcome::kOtherStop:
      return core::Status::Unsupported("another signal or event arrived while signal " +
                                       std::to_string(sig) +
                                       " was delivered: not supported by the emu engine");
    case SignalDelivery::Outcome::kAtHandler:
      break;
  }
  user_regs_struct after = delivery->regs;
  after.eflags &= ~(kTf | kRf);
  // The frame: every byte of writable memory that changed, into Unicorn too.
  writes_.Clear();
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
  std::uint64_t v[kHot];
  HotFrom(after, v);
  DiffHot(v);
  const std::span<const core::MemoryAccess> writes = writes_.Build();
  sink_.OnSignal({sig, after.rip, siginfo, changes_, writes});
  ++result_.signals;
  writes_.Clear();
  if (in_hook) {
    *in_hook = after.rip;
    return core::Status::Ok();
  }
  std::uint64_t rip = after.rip;
  uc_reg_write(uc_, UC_X86_REG_RIP, &rip);
  return core::Status::Ok();
}

void EmuSession::FinishNative(core::Address pc, std::uint8_t size, const std::uint64_t* v,
                              core::Address rip) {
  {
    user_regs_struct r = tracee_regs_;
    HotInto(v, &r);
    WriteGprs(r);
  }
  DiffHot(v);
  const std::span<const core::MemoryAccess> writes = writes_.Build();
  sink_.OnInstruction({pc, size, changes_, writes, {}});
  ++result_.instructions;
  writes_.Clear();
  // Continue after it (or at it, for the rest of a rep): writing rip makes
  // Unicorn leave the translated block before executing the instruction.
  std::uint64_t next = rip;
  uc_reg_write(uc_, UC_X86_REG_RIP, &next);
}

}  // namespace backstep::record
