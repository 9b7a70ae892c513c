// System calls in the emulation engine (emu_session.h, emu_recorder.h):
// the emulator's dirty pages go into the tracee, the tracee runs the
// `syscall`, its effects come back into Unicorn and go to the sink.
#include <signal.h>
#include <sys/ptrace.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <string>

#include "backstep/core/hex.h"
#include "recorder/emu/emu_session.h"
#include "recorder/run_session.h"
#include "recorder/signal_disposition.h"
#include "recorder/syscall_effects.h"

namespace backstep::record {

core::Status EmuSession::SyncDirty() {
  page_.resize(kPage);
  for (std::uint64_t page : dirty_) {
    const core::Address a = page * kPage;
    if (uc_mem_read(uc_, a, page_.data(), kPage) != UC_ERR_OK) continue;  // unmapped since
    if (core::Status s = tracee_.WriteMemory(a, page_); !s.ok()) {
      return core::Status::IOError("emulator: cannot update the program's page " + core::HexU64(a) +
                                   ": " + s.message());
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
    writes_.Add(r.start, std::span<const std::uint8_t>(bytes.data(), n));
  }
}

core::Status EmuSession::ApplyMapChanges(const MapChanges& maps) {
  for (const Mapping& m : maps.unmapped) {
    if (m.name == "[vsyscall]") continue;
    if (uc_err e = uc_mem_unmap(uc_, m.start, m.size); e != UC_ERR_OK) {
      return core::Status::IOError("emulator: cannot unmap " + core::HexU64(m.start) + "+" +
                                   core::HexU64(m.size) + " (" + uc_strerror(e) + ")");
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
      return core::Status::IOError("emulator: cannot change the protection of " +
                                   core::HexU64(m.start) + "+" + core::HexU64(m.size) + " (" +
                                   uc_strerror(e) + ")");
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
  writes_.Clear();
  const std::uint64_t nr = before.rax;
  const std::uint64_t args[6] = {before.rdi, before.rsi, before.rdx,
                                 before.r10, before.r8,  before.r9};
  SyscallRecord sys;
  sys.number = static_cast<std::uint32_t>(nr);
  std::copy(std::begin(args), std::end(args), sys.args);
  user_regs_struct after = before;
  if (nr == kSysRseq) {
    // As the ptrace engine: the kernel would write the rseq area behind the trace's back.
    after.rax = static_cast<std::uint64_t>(-ENOSYS);
  } else {
    core::Expected<Stop> stop = StepSyscall(pc, before);
    if (!stop.ok()) return stop.status();
    if (stop->kind != Stop::kStepped) return SyscallEnded(pc, size, *stop, &sys);
    if (core::Status s = tracee_.GetRegs(&after); !s.ok()) return s;
  }
  core::Status recorded = RecordSyscall(pc, size, before, after, &sys);
  // rseq never reaches the SyscallSource: its answers are about the call before.
  const bool answered = emu_.syscalls && nr != kSysRseq;
  if (recorded.ok() && answered && emu_.syscalls->Signal().signal) {
    recorded = DeliverAfterSyscall(emu_.syscalls->Signal());
  }
  if (recorded.ok() && answered && emu_.syscalls->EndsHere()) {
    // The end of an interval (SyscallSource::EndsHere).
    result_.end = RecordResult::End::kInterrupted;
    done_ = true;
    uc_emu_stop(uc_);
  }
  return recorded;
}

core::Status EmuSession::DeliverAfterSyscall(const SyscallSource::SignalAfter& signal) {
  // The kernel saves x87/SSE state in the frame: the emulator's, in the tracee.
  fp_slots_ = slots_;
  CollectFp(&fp_slots_);
  if (ptrace(PTRACE_SETFPREGS, tracee_.pid(), nullptr, xstate_.data()) != 0)
    return core::Status::IOError("PTRACE_SETFPREGS: " + std::string(std::strerror(errno)));
  // The kernel writes the frame below the stack pointer (red zone, siginfo,
  // ucontext, the XSAVE area): the stack reaches there in the tracee and in
  // Unicorn first, so that the frame is copied into mapped memory.
  std::uint64_t rsp = 0;
  uc_reg_read(uc_, UC_X86_REG_RSP, &rsp);
  const core::Address below = rsp - 16 * 1024;
  if (stack_low_ && below < stack_low_ && below + kMaxStackGrowth >= stack_low_) {
    if (core::Status s = GrowStack(below); !s.ok()) return s;
  }
  // The recorded run's siginfo (the injected signal keeps it: same signo).
  if (signal.siginfo.size() == 128) {
    std::uint8_t info[128];
    std::memcpy(info, signal.siginfo.data(), sizeof info);
    if (ptrace(PTRACE_SETSIGINFO, tracee_.pid(), nullptr, info) != 0)
      return core::Status::IOError("PTRACE_SETSIGINFO: " + std::string(std::strerror(errno)));
  }
  // The syscall hook cannot move rip: the run loop goes on at the handler.
  if (core::Status s = DeliverFault(signal.signal, &resume_at_); !s.ok() || done_) return s;
  uc_emu_stop(uc_);
  return core::Status::Ok();
}

core::Expected<Stop> EmuSession::StepSyscall(core::Address pc, const user_regs_struct& before) {
  const std::uint64_t args[6] = {before.rdi, before.rsi, before.rdx,
                                 before.r10, before.r8,  before.r9};
  const bool forks = CreatesProcess(tracee_, before.rax, args);
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
  // Either can come first, and more than once: a discarded SIGCHLD (an
  // earlier child's exit) before a fork's event, another after it.
  while (stop.ok()) {
    if (stop->kind == Stop::kEvent && forks && stop->event != PTRACE_EVENT_EXEC &&
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
      continue;
    }
    if (stop->kind == Stop::kSignal && DiscardsSignal(tracee_.pid(), stop->signal)) {
      // SIGCHLD and the like: not delivered to the program. It came before
      // the system call ran or after it completed; if it interrupted it, the
      // next step restarts it.
      user_regs_struct now{};
      if (core::Status s = tracee_.GetRegs(&now); !s.ok()) return s;
      if (now.rip != pc && !RestartsSyscall(now.rax)) {
        stop = Stop();  // stepped: the signal is dropped when the tracee resumes
        break;
      }
      stop = tracee_.Step();
      continue;
    }
    break;
  }
  return stop;
}

core::Status EmuSession::SyscallEnded(core::Address pc, std::uint8_t size, const Stop& stop,
                                      SyscallRecord* sys) {
  const std::uint64_t nr = sys->number;
  switch (stop.kind) {
    case Stop::kStepped:
      break;
    case Stop::kExited:
    case Stop::kKilled: {
      sink_.OnInstruction({pc, size, {}, {}, {}});
      sys->result = 0;
      sink_.OnSyscall(*sys);
      ++result_.instructions;
      ++result_.syscalls;
      SetProgramEnd(stop, &result_);
      done_ = true;
      uc_emu_stop(uc_);
      return core::Status::Ok();
    }
    case Stop::kSignal:
      if (stop.signal == SIGINT) {
        result_.end = RecordResult::End::kInterrupted;
        done_ = true;
        uc_emu_stop(uc_);
        return core::Status::Ok();
      }
      return core::Status::Unsupported(
          "the program received signal " + std::to_string(stop.signal) + " in system call " +
          std::to_string(nr) + ": signals are not supported by the emu engine");
    case Stop::kEvent: {
      unsigned long msg = 0;
      ptrace(PTRACE_GETEVENTMSG, tracee_.pid(), nullptr, &msg);
      if (stop.event != PTRACE_EVENT_EXEC && msg != 0) kill(static_cast<pid_t>(msg), SIGKILL);
      if (stop.event == PTRACE_EVENT_EXEC)
        return core::Status::Unsupported(
            "the program calls execve: not supported by the emu engine");
      if (stop.event == PTRACE_EVENT_CLONE)
        return core::Status::Unsupported(
            "the program creates a thread (clone): not supported by the emu engine");
      return core::Status::Unsupported(
          "the program creates a process (fork/vfork): following the child is not supported "
          "by the emu engine (--follow parent records the parent)");
    }
  }
  return core::Status::Ok();
}

core::Status EmuSession::RecordSyscall(core::Address pc, std::uint8_t size,
                                       const user_regs_struct& before, user_regs_struct after,
                                       SyscallRecord* sys) {
  const std::uint64_t nr = before.rax;
  const std::uint64_t* args = sys->args;
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
  sys->result = after.rax;
  const bool failed = after.rax > ~std::uint64_t{4095};
  MapChanges maps;
  if (ChangesMappings(nr) && !failed) {
    if (core::Status s = UpdateMappings(tracee_, nr, args, after.rax, &space_, &maps); !s.ok())
      return s;
    if (core::Status s = ApplyMapChanges(maps); !s.ok()) return s;
    decoder_.Invalidate();
    info_.clear();
    // New mappings' contents for the trace: the non-zero runs, as the ptrace engine.
    AddNewMappingContents(tracee_, maps, &writes_);
  }
  if (core::Status s = given_.Apply(tracee_, nr, args, &after.rax); !s.ok()) return s;
  ranges_.clear();
  if (SyscallWrites(tracee_, nr, args, after.rax, &space_, &ranges_)) ++result_.full_diffs;
  Capture(ranges_);
  SyscallRegisters(after, sigreturn);
  const std::span<const core::MemoryAccess> writes = writes_.Build();
  sink_.OnInstruction({pc, size, {}, {}, {}});
  sys->writes = writes;
  sys->registers = changes_;
  sys->unmapped = maps.unmapped;
  sys->mapped = maps.mapped;
  sys->protected_ = maps.reprotected;
  sink_.OnSyscall(*sys);
  ++result_.instructions;
  ++result_.syscalls;
  writes_.Clear();
  return core::Status::Ok();
}

void EmuSession::SyscallRegisters(const user_regs_struct& after, bool sigreturn) {
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
}

}  // namespace backstep::record
