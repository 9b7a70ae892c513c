// The ptrace engine's step of one instruction and the fork/vfork/clone
// events it raises (ptrace_session.h; recorder.h: RecordOptions::follow).
#include <signal.h>
#include <sys/ptrace.h>

#include <fstream>
#include <string>

#include "recorder/ptrace/ptrace_session.h"

namespace backstep::record {
namespace {

// Whether `tid` is a thread of process `pid` (/proc/TID/status Tgid).
bool SameProcess(pid_t tid, pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(tid) + "/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("Tgid:", 0) == 0) return std::stol(line.substr(5)) == pid;
  }
  return false;
}

}  // namespace

core::Expected<Stop> PtraceSession::StepInstruction(core::Address pc, const Decoded& d) {
  const std::uint64_t args[6] = {regs_.rdi, regs_.rsi, regs_.rdx, regs_.r10, regs_.r8, regs_.r9};
  // Following the child: the parent, detached at the fork event (where no
  // system call can be run in it), loses the traps now.
  bool parent_untraced = false;
  if (options_.follow == RecordOptions::Follow::kChild && d.syscall && pending_signal_ == 0 &&
      !threads_.several() && CreatesProcess(tracee_, regs_.rax, args)) {
    if (core::Status s = SetTraps(tracee_, tracee_.pid(), pc, traps_, false); !s.ok()) return s;
    parent_untraced = true;
  }
  core::Expected<Stop> stop = tracee_.Step(pending_signal_);
  pending_signal_ = 0;
  bool adopted = false;
  while (stop.ok() && stop->kind == Stop::kEvent) {
    unsigned long msg = 0;
    ptrace(PTRACE_GETEVENTMSG, tracee_.thread(), nullptr, &msg);
    const pid_t tid = static_cast<pid_t>(msg);
    const bool child_process =
        stop->event == PTRACE_EVENT_FORK || stop->event == PTRACE_EVENT_VFORK ||
        (stop->event == PTRACE_EVENT_CLONE && tid > 0 && !SameProcess(tid, tracee_.pid()));
    if (child_process && tid > 0) {
      if (core::Status s = tracee_.WaitNewThread(tid); !s.ok()) return s;
      if (options_.follow == RecordOptions::Follow::kParent) {
        if (core::Status s = Untrace(tracee_, tid, pc, traps_); !s.ok()) return s;
        if (core::Status s = tracee_.Detach(tid); !s.ok()) return s;
        stop = tracee_.Step(0);  // the rest of the system call
        continue;
      }
      if (threads_.several()) {
        kill(tid, SIGKILL);
        return core::Status::Unsupported(
            "following the child process of a multi-threaded program is not supported yet");
      }
      // The child goes on from here: same memory and registers, result 0.
      if (core::Status s = tracee_.Adopt(tid); !s.ok()) return s;
      threads_.at(0).tid = tid;
      user_regs_struct child{};
      if (core::Status s = tracee_.GetRegs(&child); !s.ok()) return s;
      if (child.eflags & kTf) {  // inherited from the single-stepped parent
        child.eflags &= ~kTf;
        if (core::Status s = tracee_.SetRegs(child); !s.ok()) return s;
      }
      if (core::Status s = SetTraps(tracee_, tid, pc, traps_, true); !s.ok()) return s;
      adopted = true;
      stop = Stop();  // stopped after the system call, in the child
      break;
    }
    if (stop->event == PTRACE_EVENT_EXEC && !threads_.several()) {
      // The new image is in place; the rest of the system call returns
      // to its first instruction without running it (OnExec checks).
      user_regs_struct entry{};
      if (core::Status s = tracee_.GetRegs(&entry); !s.ok()) return s;
      stop = tracee_.Step(0);
      if (stop.ok() && stop->kind == Stop::kStepped) exec_entry_ = entry.rip;
      break;
    }
    if (stop->event != PTRACE_EVENT_CLONE || tid <= 0) return stop;  // refused: OnEvent
    if (core::Status s = AddThread(tid); !s.ok()) return s;
    stop = tracee_.Step(0);  // the rest of the clone system call
  }
  if (!stop.ok()) return stop.status();
  if (parent_untraced && !adopted && tracee_.alive() && stop->kind == Stop::kStepped) {
    // No child after all (the call failed): the parent is still recorded.
    if (core::Status s = SetTraps(tracee_, tracee_.pid(), pc, traps_, true); !s.ok()) return s;
  }
  return stop;
}

}  // namespace backstep::record
