// The ptrace engine's threads (ptrace_session.h): turns given by the
// ThreadScheduler, system calls parked while they may block, new threads,
// and the process's end.
#include <algorithm>
#include <iterator>
#include <string>

#include "recorder/ptrace/ptrace_session.h"
#include "recorder/run_session.h"

namespace backstep::record {

void PtraceSession::SwitchTo(std::size_t i, bool new_turn) {
  const std::size_t from = threads_.current_index();
  const pid_t tid = threads_.SwitchTo(i, &regs_, &slots_, new_turn);
  if (i != from) tracee_.Select(tid);
}

core::Status PtraceSession::Schedule() {
  for (;;) {
    if (std::optional<std::size_t> next = threads_.NextRunnable()) {
      SwitchTo(*next, /*new_turn=*/true);
      return core::Status::Ok();
    }
    // Every thread waits in the kernel: wait for one to come back.
    if (core::Status s = CollectParked(true); !s.ok() || ended_) return s;
  }
}

core::Status PtraceSession::CollectParked(bool wait) {
  if (wait) {
    pid_t tid = -1;
    core::Expected<std::optional<Stop>> stop = tracee_.Poll(&tid, true);
    if (!stop.ok()) return stop.status();
    for (std::size_t i = 0; i < threads_.size(); ++i) {
      if (threads_.at(i).tid == tid && threads_.at(i).parked) return FinishParked(i, **stop);
    }
    return core::Status::IOError("waitpid reported thread " + std::to_string(tid) +
                                 ", which the recorder did not resume");
  }
  for (std::size_t i = 0; i < threads_.size(); ++i) {
    if (!threads_.at(i).parked) continue;
    pid_t tid = threads_.at(i).tid;
    core::Expected<std::optional<Stop>> stop = tracee_.Poll(&tid, false);
    if (!stop.ok()) return stop.status();
    if (!*stop) continue;
    if (core::Status s = FinishParked(i, **stop); !s.ok() || ended_) return s;
  }
  return core::Status::Ok();
}

core::Status PtraceSession::FinishParked(std::size_t i, const Stop& stop) {
  const std::size_t previous = threads_.current_index();
  SwitchTo(i, /*new_turn=*/false);
  threads_.at(i).parked = false;
  const core::Address pc = threads_.at(i).parked_pc;
  const Decoded d = threads_.at(i).parked_insn;
  core::Status s = core::Status::Ok();
  switch (stop.kind) {
    case Stop::kStepped:
      s = OnStepped(pc, d);
      break;
    case Stop::kSignal:
      s = OnSignal(pc, d, stop.signal);
      break;
    case Stop::kEvent:
      s = OnEvent(stop);
      break;
    case Stop::kExited:
    case Stop::kKilled:
      ProgramEnded(stop);
      return s;
  }
  if (previous != i && threads_.Runnable(previous)) SwitchTo(previous, /*new_turn=*/false);
  return s;
}

core::Status PtraceSession::Park(core::Address pc, const Decoded& d) {
  // It may wait for another thread: let it run while the others step.
  if (core::Status s = tracee_.Resume(); !s.ok()) return s;
  ThreadScheduler::Thread& t = threads_.current();
  t.parked = true;
  t.parked_pc = pc;
  t.parked_insn = d;
  return core::Status::Ok();
}

core::Status PtraceSession::AddThread(pid_t tid) {
  if (core::Status s = tracee_.WaitNewThread(tid); !s.ok()) return s;
  ThreadScheduler::Thread t;
  t.tid = tid;
  const pid_t parent = tracee_.thread();
  tracee_.Select(tid);
  core::Status s = tracee_.GetRegs(&t.regs);
  if (s.ok() && (t.regs.eflags & kTf)) {
    // Inherited from the single-stepped parent: the program never set it.
    t.regs.eflags &= ~kTf;
    s = tracee_.SetRegs(t.regs);
  }
  if (s.ok()) s = tracee_.GetXState(&xstate_);
  tracee_.Select(parent);
  if (!s.ok()) return s;
  t.slots.resize(layout_.count());
  layout_.CollectGprs(t.regs, t.slots);
  layout_.CollectFp(xstate_, t.slots);
  threads_.Add(std::move(t));
  return core::Status::Ok();
}

void PtraceSession::AnnounceStarted() {
  for (std::size_t i : threads_.TakeStarted()) {
    const ThreadScheduler::Thread& t = threads_.at(i);
    sink_.OnThreadSwitch(t.index, regs_.rip);
    sink_.OnThreadStart({t.index, t.slots, t.regs.rip});
    threads_.SinkFollows(t.index);
  }
}

void PtraceSession::EndProcess(core::Address pc, const Decoded& d) {
  Stop end;
  if (tracee_.Resume().ok()) tracee_.ReapAll(&end);
  SetProgramEnd(end, &result_);
  ended_ = true;
  RecordExitSyscall(pc, d, false);
}

void PtraceSession::RecordExitSyscall(core::Address pc, const Decoded& d, bool diff) {
  threads_.SinkFollowCurrent(sink_);
  sink_.OnInstruction({pc, d.size, {}, {}, {}});
  SyscallRecord r;
  r.number = static_cast<std::uint32_t>(regs_.rax);
  r.result = 0;
  const std::uint64_t args[6] = {regs_.rdi, regs_.rsi, regs_.rdx, regs_.r10, regs_.r8, regs_.r9};
  std::copy(std::begin(args), std::end(args), r.args);
  writes_.Clear();
  if (diff) {
    ranges_.clear();
    space_.Diff(tracee_, &ranges_);
    Capture(ranges_);
  }
  r.writes = writes_.Build();
  sink_.OnSyscall(r);
  ++result_.instructions;
  ++result_.syscalls;
}

}  // namespace backstep::record
