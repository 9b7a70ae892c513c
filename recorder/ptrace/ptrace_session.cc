// The ptrace engine's start, run loop and step (ptrace_session.h).
#include "recorder/ptrace/ptrace_session.h"

#include <sys/syscall.h>

#include <cerrno>
#include <cstdlib>
#include <string>

#include "recorder/cpuid.h"
#include "recorder/run_session.h"
#include "recorder/session_start.h"
#include "recorder/syscall_effects.h"

namespace backstep::record {
namespace {

constexpr std::size_t kMaxInsn = 15;

// Whether system call `nr` may wait for another thread (or the outside
// world): it then runs while other threads are stepped.
bool MayBlock(std::uint64_t nr, const std::uint64_t args[6]) {
  switch (nr) {
    case SYS_futex: {
      const std::uint64_t op = args[1] & 127;                        // FUTEX_CMD_MASK
      return op == 0 || op == 6 || op == 9 || op == 11 || op == 13;  // WAIT, LOCK_PI, ...
    }
    case SYS_read:
    case SYS_readv:
    case SYS_write:
    case SYS_writev:
    case SYS_recvfrom:
    case SYS_recvmsg:
    case SYS_sendto:
    case SYS_sendmsg:
    case SYS_poll:
    case SYS_ppoll:
    case SYS_select:
    case SYS_pselect6:
    case SYS_epoll_wait:
    case SYS_epoll_pwait:
    case SYS_nanosleep:
    case SYS_clock_nanosleep:
    case SYS_wait4:
    case SYS_waitid:
    case SYS_pause:
    case SYS_rt_sigsuspend:
    case SYS_rt_sigtimedwait:
    case SYS_accept:
    case SYS_accept4:
    case SYS_connect:
    case SYS_msgrcv:
    case SYS_semop:
    case SYS_semtimedop:
    case SYS_flock:
    case SYS_fcntl:
      return true;
    default:
      return false;
  }
}

}  // namespace

core::Status PtraceSession::Start() {
  // Without CPUID faulting (a CPU lacking cpuid_fault), each cpuid the
  // stepper is about to execute is answered instead (StepOnce): this engine
  // sees every instruction before the CPU runs it.
  traps_ = EnableTraps(tracee_, options_.spawn.trap_rdtsc, options_.portable_cpuid);
  InitialState initial;
  if (core::Status s = ReadInitialState(tracee_, layout_, options_.hide_vdso, &space_, &initial);
      !s.ok())
    return s;
  regs_ = initial.regs;
  xstate_ = std::move(initial.xstate);
  slots_ = std::move(initial.slots);
  return StartSink(sink_, tracee_, space_, std::move(initial.auxv), slots_, regs_.rip);
}

const Decoded& PtraceSession::DecodeAt(core::Address pc) {
  const Decoded* cached = decoder_.Find(pc);
  if (cached) {
    const Mapping* m = space_.Find(pc);
    if (!m || !m->write) return *cached;  // code that cannot change without a syscall
  }
  std::uint8_t bytes[kMaxInsn];
  const std::size_t n = tracee_.ReadMemory(pc, bytes);
  return decoder_.Decode(pc, std::span<const std::uint8_t>(bytes, n));
}

core::Status PtraceSession::Run() {
  while (!ended_) {
    if (options_.max_instructions && result_.instructions >= *options_.max_instructions) {
      result_.end = RecordResult::End::kMaxInstructions;
      break;
    }
    if (options_.progress && result_.instructions % 4096 == 0 &&
        !options_.progress(result_.instructions)) {
      result_.end = RecordResult::End::kInterrupted;
      break;
    }
    if (core::Status s = StepOnce(); !s.ok()) return s;
  }
  if (tracee_.alive()) {
    // Cut short: a last check that the trace holds what memory holds.
    if (core::Status s = Check(false); !s.ok()) return s;
    tracee_.Kill();
  }
  return core::Status::Ok();
}

core::Status PtraceSession::StepOnce() {
  if (threads_.several()) {
    if (core::Status s = CollectParked(false); !s.ok() || ended_) return s;
    if (threads_.TurnOver()) {
      if (core::Status s = Schedule(); !s.ok() || ended_) return s;
    }
  }
  threads_.CountInstruction();
  const core::Address pc = regs_.rip;
  const Decoded& d = DecodeAt(pc);
  if (d.size == 0) ++result_.undecodable;
  if (d.size != 0 && d.unknown_reads) ++result_.unbounded_reads;
  if (d.breakpoint) {
    return core::Status::Unsupported(
        "the program executes a breakpoint or software interrupt "
        "instruction (int3/int n): not supported yet");
  }
  if (d.syscall && regs_.rax == kSysRseq) return EmulateSyscallFailure(pc, d, -ENOSYS);
  const Decoded decoded = d;  // the cache may change below
  if (decoded.syscall && threads_.several()) {
    if (std::optional<core::Status> handled = ThreadSyscall(pc, decoded)) return *handled;
  }
  if (decoded.cpuid && !traps_.cpuid && pending_signal_ == 0) {
    // Answered here, never single-stepped: from the portable table, or the
    // host's own cpuid. Some hypervisors end a step over cpuid (which they
    // emulate) one instruction late, so a stepped cpuid would hide the next
    // instruction from the trace.
    user_regs_struct after = regs_;
    AnswerCpuid(&after, options_.portable_cpuid);
    if (core::Status s = tracee_.SetRegs(after); !s.ok()) return s;
    return OnStepped(pc, decoded);
  }
  if (decoded.gather && options_.reads) {
    // The lanes' indices and mask as they are before the step (it clears the mask).
    if (core::Status s = tracee_.GetXState(&gather_xstate_); !s.ok()) return s;
  }
  core::Expected<Stop> stop = StepInstruction(pc, decoded);
  if (!stop.ok()) return stop.status();
  return OnStop(pc, decoded, *stop);
}

std::optional<core::Status> PtraceSession::ThreadSyscall(core::Address pc, const Decoded& d) {
  if (regs_.rax == kSysExitGroup) {
    // The leader's exit is reported only once every thread is reaped.
    EndProcess(pc, d);
    return core::Status::Ok();
  }
  if (regs_.rax == kSysExit && threads_.current_index() == 0) {
    for (std::size_t i = 1; i < threads_.size(); ++i) {
      if (!threads_.at(i).exited) {
        return core::Status::Unsupported(
            "the main thread exits (exit) while other threads run: not supported yet");
      }
    }
  }
  const std::uint64_t args[6] = {regs_.rdi, regs_.rsi, regs_.rdx, regs_.r10, regs_.r8, regs_.r9};
  if (pending_signal_ == 0 && MayBlock(regs_.rax, args)) return Park(pc, d);
  return std::nullopt;
}

core::Status PtraceSession::OnStop(core::Address pc, const Decoded& d, const Stop& stop) {
  switch (stop.kind) {
    case Stop::kStepped: {
      if (exec_entry_) return OnExec(pc, d);
      core::Status s = OnStepped(pc, d);
      AnnounceStarted();
      return s;
    }
    case Stop::kSignal:
      return OnSignal(pc, d, stop.signal);
    case Stop::kEvent:
      return OnEvent(stop);
    case Stop::kExited:
    case Stop::kKilled: {
      if (tracee_.alive() && stop.kind == Stop::kExited && d.syscall && regs_.rax == kSysExit) {
        // One thread ended; the kernel's writes (CLONE_CHILD_CLEARTID) are in memory.
        RecordExitSyscall(pc, d, true);
        threads_.current().exited = true;
        return core::Status::Ok();
      }
      // exit/exit_group (or a fatal signal): the instruction ran, nothing is left to read.
      ProgramEnded(stop);
      if (result_.end == RecordResult::End::kExited && d.syscall) RecordExitSyscall(pc, d, false);
      return core::Status::Ok();
    }
  }
  return core::Status::Ok();
}

void PtraceSession::ProgramEnded(Stop end) {
  if (tracee_.alive()) tracee_.ReapAll(&end);
  ended_ = true;
  SetProgramEnd(end, &result_);
}

core::Expected<RecordResult> Record(const RecordOptions& options, RecordingSink& sink) {
  RecordOptions tuned = options;
  // NOTE: BACKSTEP_RECORD_CHECK=N checks every N instructions (debugging the decoder).
  if (const char* check = getenv("BACKSTEP_RECORD_CHECK"))
    tuned.check_interval = std::stoull(check);
  return SpawnAndRun<PtraceSession>(tuned, sink);
}

}  // namespace backstep::record
