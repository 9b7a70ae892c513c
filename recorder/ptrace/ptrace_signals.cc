// Signals and events in the ptrace engine (ptrace_session.h; recorder.h
// says what is delivered, recorded and refused).
#include <signal.h>
#include <sys/ptrace.h>

#include <cstdio>
#include <cstring>
#include <string>

#include "recorder/cpuid.h"
#include "recorder/ptrace/ptrace_session.h"
#include "recorder/signal_delivery.h"
#include "recorder/signal_disposition.h"

namespace backstep::record {
namespace {

// Whether the instruction at `before` ran: the registers differ, the flags
// that single-stepping and a fault set aside (TF; RF, set in the flags a
// fault saves).
bool InstructionRan(const user_regs_struct& before, const user_regs_struct& now) {
  constexpr std::uint64_t kStepFlags = (1u << 8) | (1u << 16);  // TF, RF
  user_regs_struct a = before, b = now;
  a.eflags &= ~kStepFlags;
  b.eflags &= ~kStepFlags;
  return std::memcmp(&a, &b, sizeof a) != 0;
}

}  // namespace

core::Status PtraceSession::OnSignal(core::Address pc, const Decoded& d, int sig) {
  if (sig == SIGSEGV && (d.rdtsc || d.rdtscp)) return EmulateRdtsc(pc, d);
  if (sig == SIGSEGV && options_.portable_cpuid && IsCpuidAt(tracee_, pc)) {
    user_regs_struct after = regs_;  // CPUID faulting: answer from the portable table
    AnswerCpuid(&after);
    if (core::Status s = tracee_.SetRegs(after); !s.ok()) return s;
    return OnStepped(pc, d);
  }
  if (sig == SIGINT) {
    // Ctrl-C reaches the whole foreground process group: stop cleanly.
    result_.end = RecordResult::End::kInterrupted;
    ended_ = true;
    return core::Status::Ok();
  }
  const std::string name = SignalName(sig);
  siginfo_ = ReadSigInfo(tracee_);
  // SIGSTOP cannot be handled; the others stop only by default.
  if (HandlesSignal(tracee_.pid(), sig) && sig != SIGSTOP) return DeliverHandled(pc, d, sig);
  user_regs_struct now{};
  if (core::Status s = tracee_.GetRegs(&now); !s.ok()) return s;
  if (InstructionRan(regs_, now)) {
    // The instruction ran first (a system call that returned as the signal
    // came, SIGCHLD after wait4): record it, then deliver.
    if (!d.syscall || RestartsSyscall(now.rax)) {
      return core::Status::Unsupported(
          "a signal (" + name + ") " +
          (d.syscall ? "interrupted a system call that the kernel restarts"
                     : "arrived after an instruction that is not a system call") +
          ": not supported yet");
    }
    if (core::Status s = OnStepped(pc, d); !s.ok()) return s;
  }
  // Not handled: recorded as a delivery without effects (a debugger stops
  // there, as on the live process), then delivered with the next step
  // (ignored: it vanishes; fatal: the program ends, and the recording with it).
  ++result_.signals;
  threads_.SinkFollowCurrent(sink_);
  sink_.OnSignal({sig, regs_.rip, siginfo_, {}, {}});
  if (StopsByDefault(sig) && !IgnoresSignal(tracee_.pid(), sig)) {
    // The process would stop until a SIGCONT: the recording would wait for
    // ever. The recorder drops the signal, which resumes it at once.
    std::fprintf(stderr,
                 "backstep: %s stopped the program (default action); the recorder resumed it\n",
                 name.c_str());
    return core::Status::Ok();
  }
  pending_signal_ = sig;
  return core::Status::Ok();
}

core::Status PtraceSession::DeliverHandled(core::Address pc, const Decoded& d, int sig) {
  const std::string name = SignalName(sig);
  user_regs_struct now{};
  if (core::Status s = tracee_.GetRegs(&now); !s.ok()) return s;
  if (InstructionRan(regs_, now)) {
    // The instruction ran first: a system call (completed, or interrupted
    // with -ERESTART*, which the delivery turns into -EINTR or a restart).
    if (!d.syscall) {
      return core::Status::Unsupported("the program received " + name +
                                       " after an instruction that is not a system call: "
                                       "not supported");
    }
    if (core::Status s = OnStepped(pc, d); !s.ok()) return s;
  }
  core::Expected<SignalDelivery> delivery = DeliverSignal(tracee_, sig);
  if (!delivery.ok()) return delivery.status();
  switch (delivery->outcome) {
    case SignalDelivery::Outcome::kEnded:
      ProgramEnded(delivery->stop);
      return core::Status::Ok();
    case SignalDelivery::Outcome::kOtherStop:
      return core::Status::Unsupported("another signal or event arrived while " + name +
                                       " was delivered: not supported yet");
    case SignalDelivery::Outcome::kAtHandler:
      break;
  }
  const user_regs_struct& after = delivery->regs;
  next_slots_ = slots_;
  layout_.CollectGprs(after, next_slots_);
  if (core::Status s = tracee_.GetXState(&xstate_); !s.ok()) return s;
  layout_.CollectFp(xstate_, next_slots_);
  changes_.clear();
  DiffRegisters(layout_, slots_, next_slots_, 0, layout_.count(), &changes_);
  // The frame: every byte of writable memory that changed.
  writes_.Clear();
  ranges_.clear();
  ++result_.full_diffs;
  space_.Diff(tracee_, &ranges_);
  Capture(ranges_);
  const std::span<const core::MemoryAccess> writes = writes_.Build();
  slots_.swap(next_slots_);
  regs_ = after;
  ++result_.signals;
  threads_.SinkFollowCurrent(sink_);
  sink_.OnSignal({sig, after.rip, siginfo_, changes_, writes});
  return core::Status::Ok();
}

core::Status PtraceSession::OnEvent(const Stop& stop) {
  unsigned long msg = 0;
  ptrace(PTRACE_GETEVENTMSG, tracee_.thread(), nullptr, &msg);
  if (stop.event == PTRACE_EVENT_EXEC) {
    return core::Status::Unsupported(
        "a multi-threaded program calls execve: the trace ends before it (recording "
        "across the exec of a program with several threads is not supported yet)");
  }
  if (msg != 0) kill(static_cast<pid_t>(msg), SIGKILL);  // the new child or thread
  if (stop.event == PTRACE_EVENT_CLONE) {
    return core::Status::Unsupported(
        "the program creates a process with clone (without CLONE_THREAD): recording child "
        "processes is not supported yet");
  }
  return core::Status::Unsupported(
      "the program creates a process (fork/vfork): recording "
      "child processes is not supported yet");
}

}  // namespace backstep::record
