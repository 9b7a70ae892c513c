#include "recorder/recorder.h"

#include <signal.h>
#include <sys/ptrace.h>
#include <sys/syscall.h>
#include <x86intrin.h>

#include <array>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <string_view>

#include "recorder/address_space.h"
#include "recorder/cpu_state.h"
#include "recorder/cpuid.h"
#include "recorder/insn_decoder.h"
#include "recorder/run_session.h"
#include "recorder/syscall_effects.h"
#include "recorder/untraced.h"
#include "recorder/vdso.h"

namespace backstep::record {
namespace {

constexpr std::uint64_t kTf = 1u << 8, kRf = 1u << 16;
constexpr std::size_t kMaxInsn = 15;
constexpr std::uint64_t kPage = 4096;

std::string SignalName(int sig) {
  const char* abbrev = sigabbrev_np(sig);
  return abbrev ? std::string("SIG") + abbrev : "signal " + std::to_string(sig);
}

// Whether `sig` is in the signal mask `field` ("SigCgt:" handled, "SigIgn:"
// ignored) of /proc/PID/status; `unknown` when it cannot be read.
bool SignalInMask(pid_t pid, std::string_view field, int sig, bool unknown) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(field, 0) == 0) {
      const std::uint64_t mask = std::stoull(line.substr(field.size()), nullptr, 16);
      return (mask >> (sig - 1)) & 1;
    }
  }
  return unknown;
}

// Whether the program has a handler for `sig`.
bool HandlesSignal(pid_t pid, int sig) {
  return SignalInMask(pid, "SigCgt:", sig, true);  // unknown: assume the worst
}

// Whether `sig`'s default action stops the process.
bool StopsByDefault(int sig) {
  return sig == SIGSTOP || sig == SIGTSTP || sig == SIGTTIN || sig == SIGTTOU;
}

// Whether the instruction at `before` ran: the registers differ, the flags
// that single-stepping and a fault set aside (TF; RF, set in the flags a
// fault saves).
bool InstructionRan(const user_regs_struct& before, const user_regs_struct& now) {
  user_regs_struct a = before, b = now;
  a.eflags &= ~(kTf | kRf);
  b.eflags &= ~(kTf | kRf);
  return std::memcmp(&a, &b, sizeof a) != 0;
}

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

// A system call's result that makes the kernel restart it when no handler
// runs (-ERESTARTSYS, -ERESTARTNOINTR, -ERESTARTNOHAND, -ERESTART_RESTARTBLOCK).
bool IsRestart(std::uint64_t rax) {
  const std::int64_t r = static_cast<std::int64_t>(rax);
  return r == -512 || r == -513 || r == -514 || r == -516;
}

// Whether `tid` is a thread of process `pid` (/proc/TID/status Tgid).
bool SameProcess(pid_t tid, pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(tid) + "/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("Tgid:", 0) == 0) return std::stol(line.substr(5)) == pid;
  }
  return false;
}

// Instructions a thread runs before the next one gets its turn (when no
// thread blocks first): round robin, so the order is deterministic.
constexpr std::uint64_t kTimeSlice = 50000;

class Session {
 public:
  Session(const RecordOptions& options, RecordingSink& sink, Tracee tracee)
      : options_(options), sink_(sink), tracee_(std::move(tracee)) {}

  core::Status Start();
  // Runs to the end; the result's End says why it stopped.
  core::Status Run();
  RecordResult& result() { return result_; }

 private:
  const Decoded& DecodeAt(core::Address pc);
  core::Status StepOnce(bool* done);
  core::Status OnStepped(core::Address pc, const Decoded& d);
  core::Status OnSignal(core::Address pc, const Decoded& d, int sig, bool* done);
  core::Status OnEvent(const Stop& stop);
  // Runs the kernel's delivery of a signal the program handles (stopping at
  // the handler's first instruction) and records it.
  core::Status DeliverHandled(core::Address pc, const Decoded& d, int sig, bool* done);
  Traps traps() const { return {options_.spawn.trap_rdtsc, cpuid_faults_}; }
  core::Status EmulateRdtsc(core::Address pc, const Decoded& d);
  core::Status EmulateSyscallFailure(core::Address pc, const Decoded& d, std::int64_t error);
  // Reads `ranges` into writes_ (and the shadow).
  void Capture(std::span<const Range> ranges);
  // The reads of the instruction just stepped into reads_.
  void CollectReads(const Decoded& d, const user_regs_struct& after);
  core::Status SyscallEffects(const user_regs_struct& before, const user_regs_struct& after,
                              SyscallRecord* record, MapChanges* maps);
  core::Status Check(bool fp_fetched);

  // --- threads ---
  struct Thread {
    pid_t tid = 0;
    std::uint32_t index = 0;  // the sink's thread number
    user_regs_struct regs{};  // saved while another thread is current
    std::vector<core::RegisterWrite> slots;
    bool parked = false;  // resumed into a system call that may block
    bool exited = false;
    core::Address parked_pc = 0;
    Decoded parked_insn;
  };
  bool Runnable(const Thread& t) const { return !t.parked && !t.exited; }
  // Makes threads_[i] current: regs_/slots_ and the tracee's selection.
  void SwitchTo(std::size_t i);
  // Tells the sink that what follows is about the current thread.
  void SinkFollows();
  // Picks the next runnable thread (round robin), waiting for a parked one
  // when none can run.
  core::Status Schedule(bool* done);
  // Records the parked system calls that have returned (`wait`: at least one).
  core::Status CollectParked(bool wait, bool* done);
  core::Status FinishParked(std::size_t i, const Stop& stop, bool* done);
  // A CLONE event during the current thread's step: the new thread.
  core::Status AddThread(pid_t tid);
  // The program ends (exit_group with several threads): reaps them all.
  void EndProcess(core::Address pc, const Decoded& d);
  void RecordExitSyscall(core::Address pc, const Decoded& d, bool diff);

  const RecordOptions& options_;
  RecordingSink& sink_;
  Tracee tracee_;
  CpuLayout layout_;
  InsnDecoder decoder_;
  AddressSpace space_;
  RecordResult result_;
  user_regs_struct regs_{};  // before the next instruction
  std::vector<core::RegisterWrite> slots_, next_slots_, changes_;
  std::vector<std::uint8_t> xstate_;
  std::vector<Range> ranges_, changed_;
  std::vector<std::uint8_t> data_;                            // contents of writes_
  std::vector<std::pair<core::Address, std::size_t>> spans_;  // (address, size) into data_
  std::vector<core::MemoryAccess> writes_;
  std::vector<Range> read_ranges_;
  std::vector<std::uint8_t> read_data_;  // contents (or zeros) of reads_
  std::vector<core::MemoryAccess> reads_;
  int pending_signal_ = 0;
  bool cpuid_faults_ = false;                // --cpuid portable through CPUID faulting (Start)
  std::array<std::uint8_t, 128> siginfo_{};  // of the signal OnSignal handles
  core::Address last_pc_ = 0;
  std::vector<Thread> threads_;
  std::size_t current_ = 0;
  std::uint32_t sink_thread_ = 0;     // the thread the sink's calls are about
  std::uint64_t slice_ = 0;           // instructions of the current thread's turn
  std::vector<std::size_t> started_;  // new threads to announce after the clone
};

core::Status Session::Start() {
  // Without CPUID faulting (a CPU lacking cpuid_fault), --cpuid portable is
  // kept by answering each cpuid the stepper is about to execute (StepOnce):
  // this engine sees every instruction before the CPU runs it.
  if (options_.portable_cpuid) cpuid_faults_ = EnableCpuidFaulting(tracee_).ok();
  if (core::Status s = tracee_.GetRegs(&regs_); !s.ok()) return s;
  if (core::Status s = tracee_.GetXState(&xstate_); !s.ok()) return s;
  slots_.resize(layout_.count());
  layout_.CollectGprs(regs_, slots_);
  layout_.CollectFp(xstate_, slots_);
  core::Expected<std::vector<std::uint8_t>> auxv = tracee_.ReadAuxv();
  if (!auxv.ok()) return auxv.status();
  if (options_.hide_vdso) {
    if (core::Status s = HideVdso(tracee_, regs_.rsp, &*auxv); !s.ok()) return s;
  }
  if (core::Status s = space_.Init(tracee_); !s.ok()) return s;
  StartInfo start;
  start.pid = static_cast<std::uint64_t>(tracee_.pid());
  start.executable = tracee_.ExecutablePath();
  start.auxv = std::move(*auxv);
  start.mappings = space_.mappings();
  start.contents = [this](const Mapping& m, std::vector<std::uint8_t>* out) {
    out->assign(m.size, 0);
    if (m.name.rfind("[vvar", 0) != 0 && m.name != "[vsyscall]")
      tracee_.ReadMemoryZeroFill(m.start, *out);
    return core::Status::Ok();
  };
  start.registers = slots_;
  start.pc = regs_.rip;
  Thread leader;
  leader.tid = tracee_.pid();
  threads_.push_back(std::move(leader));
  return sink_.OnStart(start);
}

const Decoded& Session::DecodeAt(core::Address pc) {
  const Decoded* cached = decoder_.Find(pc);
  if (cached) {
    const Mapping* m = space_.Find(pc);
    if (!m || !m->write) return *cached;  // code that cannot change without a syscall
  }
  std::uint8_t bytes[kMaxInsn];
  const std::size_t n = tracee_.ReadMemory(pc, bytes);
  return decoder_.Decode(pc, std::span<const std::uint8_t>(bytes, n));
}

core::Status Session::Run() {
  bool done = false;
  while (!done) {
    if (options_.max_instructions && result_.instructions >= *options_.max_instructions) {
      result_.end = RecordResult::End::kMaxInstructions;
      break;
    }
    if (options_.progress && result_.instructions % 4096 == 0 &&
        !options_.progress(result_.instructions)) {
      result_.end = RecordResult::End::kInterrupted;
      break;
    }
    if (core::Status s = StepOnce(&done); !s.ok()) return s;
  }
  if (tracee_.alive()) {
    // Cut short: a last check that the trace holds what memory holds.
    if (core::Status s = Check(false); !s.ok()) return s;
    tracee_.Kill();
  }
  return core::Status::Ok();
}

core::Status Session::StepOnce(bool* done) {
  if (threads_.size() > 1) {
    if (core::Status s = CollectParked(false, done); !s.ok() || *done) return s;
    if (!Runnable(threads_[current_]) || slice_ >= kTimeSlice) {
      if (core::Status s = Schedule(done); !s.ok() || *done) return s;
    }
  }
  ++slice_;
  const core::Address pc = regs_.rip;
  const Decoded& d = DecodeAt(pc);
  if (d.size == 0) ++result_.undecodable;
  if (d.breakpoint) {
    return core::Status::Unsupported(
        "the program executes a breakpoint or software interrupt "
        "instruction (int3/int n): not supported yet");
  }
  if (d.syscall && regs_.rax == kSysRseq) return EmulateSyscallFailure(pc, d, -ENOSYS);
  const Decoded decoded = d;  // the cache may change below
  const std::uint64_t args[6] = {regs_.rdi, regs_.rsi, regs_.rdx, regs_.r10, regs_.r8, regs_.r9};
  if (decoded.syscall && threads_.size() > 1) {
    if (regs_.rax == kSysExitGroup) {
      // The leader's exit is reported only once every thread is reaped.
      EndProcess(pc, decoded);
      *done = true;
      return core::Status::Ok();
    }
    if (regs_.rax == kSysExit && current_ == 0) {
      for (std::size_t i = 1; i < threads_.size(); ++i) {
        if (!threads_[i].exited) {
          return core::Status::Unsupported(
              "the main thread exits (exit) while other threads run: not supported yet");
        }
      }
    }
    if (pending_signal_ == 0 && MayBlock(regs_.rax, args)) {
      // It may wait for another thread: let it run while the others step.
      if (core::Status s = tracee_.Resume(); !s.ok()) return s;
      Thread& t = threads_[current_];
      t.parked = true;
      t.parked_pc = pc;
      t.parked_insn = decoded;
      return core::Status::Ok();
    }
  }
  if (options_.portable_cpuid && !cpuid_faults_ && decoded.cpuid && pending_signal_ == 0) {
    user_regs_struct after = regs_;  // answered from the portable table, not run
    AnswerCpuid(&after);
    if (core::Status s = tracee_.SetRegs(after); !s.ok()) return s;
    return OnStepped(pc, decoded);
  }
  // Following the child: the parent, detached at the fork event (where no
  // system call can be run in it), loses the traps now.
  bool parent_untraced = false;
  if (options_.follow == RecordOptions::Follow::kChild && decoded.syscall && pending_signal_ == 0 &&
      threads_.size() == 1 && CreatesProcess(tracee_, regs_.rax, args)) {
    if (core::Status s = SetTraps(tracee_, tracee_.pid(), pc, traps(), false); !s.ok()) return s;
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
        if (core::Status s = Untrace(tracee_, tid, pc, traps()); !s.ok()) return s;
        if (core::Status s = tracee_.Detach(tid); !s.ok()) return s;
        stop = tracee_.Step(0);  // the rest of the system call
        continue;
      }
      if (threads_.size() > 1) {
        kill(tid, SIGKILL);
        return core::Status::Unsupported(
            "following the child process of a multi-threaded program is not supported yet");
      }
      // The child goes on from here: same memory and registers, result 0.
      if (core::Status s = tracee_.Adopt(tid); !s.ok()) return s;
      threads_[0].tid = tid;
      user_regs_struct child{};
      if (core::Status s = tracee_.GetRegs(&child); !s.ok()) return s;
      if (child.eflags & kTf) {  // inherited from the single-stepped parent
        child.eflags &= ~kTf;
        if (core::Status s = tracee_.SetRegs(child); !s.ok()) return s;
      }
      if (core::Status s = SetTraps(tracee_, tid, pc, traps(), true); !s.ok()) return s;
      adopted = true;
      stop = Stop();  // stopped after the system call, in the child
      break;
    }
    if (stop->event != PTRACE_EVENT_CLONE || tid <= 0) return OnEvent(*stop);
    if (core::Status s = AddThread(tid); !s.ok()) return s;
    stop = tracee_.Step(0);  // the rest of the clone system call
  }
  if (!stop.ok()) return stop.status();
  if (parent_untraced && !adopted && tracee_.alive() && stop->kind == Stop::kStepped) {
    // No child after all (the call failed): the parent is still recorded.
    if (core::Status s = SetTraps(tracee_, tracee_.pid(), pc, traps(), true); !s.ok()) return s;
  }
  switch (stop->kind) {
    case Stop::kStepped: {
      core::Status s = OnStepped(pc, decoded);
      for (std::size_t i : started_) {
        const Thread& t = threads_[i];
        sink_.OnThreadSwitch(t.index, regs_.rip);
        sink_.OnThreadStart({t.index, t.slots, t.regs.rip});
        sink_thread_ = t.index;
      }
      started_.clear();
      return s;
    }
    case Stop::kSignal:
      return OnSignal(pc, decoded, stop->signal, done);
    case Stop::kEvent:
      return OnEvent(*stop);
    case Stop::kExited:
    case Stop::kKilled: {
      if (tracee_.alive() && stop->kind == Stop::kExited && decoded.syscall &&
          regs_.rax == kSysExit) {
        // One thread ended; the kernel's writes (CLONE_CHILD_CLEARTID) are in memory.
        RecordExitSyscall(pc, decoded, true);
        threads_[current_].exited = true;
        return core::Status::Ok();
      }
      Stop end = *stop;
      if (tracee_.alive()) tracee_.ReapAll(&end);
      // exit/exit_group (or a fatal signal): the instruction ran, nothing is left to read.
      *done = true;
      const bool exited = end.kind == Stop::kExited;
      result_.end = exited ? RecordResult::End::kExited : RecordResult::End::kKilled;
      result_.exit_code = end.exit_code;
      result_.signal = end.signal;
      if (exited && decoded.syscall) RecordExitSyscall(pc, decoded, false);
      return core::Status::Ok();
    }
  }
  return core::Status::Ok();
}

void Session::RecordExitSyscall(core::Address pc, const Decoded& d, bool diff) {
  SinkFollows();
  sink_.OnInstruction({pc, d.size, {}, {}, {}});
  SyscallRecord r;
  r.number = static_cast<std::uint32_t>(regs_.rax);
  r.result = 0;
  const std::uint64_t args[6] = {regs_.rdi, regs_.rsi, regs_.rdx, regs_.r10, regs_.r8, regs_.r9};
  std::copy(std::begin(args), std::end(args), r.args);
  data_.clear();
  spans_.clear();
  writes_.clear();
  if (diff) {
    ranges_.clear();
    space_.Diff(tracee_, &ranges_);
    Capture(ranges_);
    std::size_t offset = 0;
    for (const auto& [address, size] : spans_) {
      writes_.push_back({address, std::span<const std::uint8_t>(data_).subspan(offset, size)});
      offset += size;
    }
  }
  r.writes = writes_;
  sink_.OnSyscall(r);
  ++result_.instructions;
  ++result_.syscalls;
}

void Session::EndProcess(core::Address pc, const Decoded& d) {
  Stop end;
  if (tracee_.Resume().ok()) tracee_.ReapAll(&end);
  const bool exited = end.kind == Stop::kExited;
  result_.end = exited ? RecordResult::End::kExited : RecordResult::End::kKilled;
  result_.exit_code = end.exit_code;
  result_.signal = end.signal;
  RecordExitSyscall(pc, d, false);
}

void Session::SwitchTo(std::size_t i) {
  if (i == current_) return;
  Thread& from = threads_[current_];
  from.regs = regs_;
  from.slots.swap(slots_);
  current_ = i;
  Thread& to = threads_[i];
  regs_ = to.regs;
  slots_.swap(to.slots);
  tracee_.Select(to.tid);
}

void Session::SinkFollows() {
  const Thread& t = threads_[current_];
  if (t.index == sink_thread_) return;
  const Thread& from = threads_[sink_thread_];  // index == position: threads are never removed
  std::optional<core::Address> next;
  if (!from.exited) next = from.regs.rip;  // saved: it is not the current thread
  sink_.OnThreadSwitch(t.index, next);
  sink_thread_ = t.index;
}

core::Status Session::Schedule(bool* done) {
  for (;;) {
    for (std::size_t k = 1; k <= threads_.size(); ++k) {
      const std::size_t j = (current_ + k) % threads_.size();
      if (Runnable(threads_[j])) {
        SwitchTo(j);
        slice_ = 0;
        return core::Status::Ok();
      }
    }
    // Every thread waits in the kernel: wait for one to come back.
    if (core::Status s = CollectParked(true, done); !s.ok() || *done) return s;
  }
}

core::Status Session::CollectParked(bool wait, bool* done) {
  if (wait) {
    pid_t tid = -1;
    core::Expected<std::optional<Stop>> stop = tracee_.Poll(&tid, true);
    if (!stop.ok()) return stop.status();
    for (std::size_t i = 0; i < threads_.size(); ++i) {
      if (threads_[i].tid == tid && threads_[i].parked) return FinishParked(i, **stop, done);
    }
    return core::Status::IOError("waitpid reported thread " + std::to_string(tid) +
                                 ", which the recorder did not resume");
  }
  for (std::size_t i = 0; i < threads_.size(); ++i) {
    if (!threads_[i].parked) continue;
    pid_t tid = threads_[i].tid;
    core::Expected<std::optional<Stop>> stop = tracee_.Poll(&tid, false);
    if (!stop.ok()) return stop.status();
    if (!*stop) continue;
    if (core::Status s = FinishParked(i, **stop, done); !s.ok() || *done) return s;
  }
  return core::Status::Ok();
}

core::Status Session::FinishParked(std::size_t i, const Stop& stop, bool* done) {
  const std::size_t previous = current_;
  SwitchTo(i);
  threads_[i].parked = false;
  const core::Address pc = threads_[i].parked_pc;
  const Decoded d = threads_[i].parked_insn;
  core::Status s = core::Status::Ok();
  switch (stop.kind) {
    case Stop::kStepped:
      s = OnStepped(pc, d);
      break;
    case Stop::kSignal:
      s = OnSignal(pc, d, stop.signal, done);
      break;
    case Stop::kEvent:
      s = OnEvent(stop);
      break;
    case Stop::kExited:
    case Stop::kKilled: {
      Stop end = stop;
      if (tracee_.alive()) tracee_.ReapAll(&end);
      *done = true;
      result_.end =
          end.kind == Stop::kExited ? RecordResult::End::kExited : RecordResult::End::kKilled;
      result_.exit_code = end.exit_code;
      result_.signal = end.signal;
      return s;
    }
  }
  if (previous != i && Runnable(threads_[previous])) SwitchTo(previous);
  return s;
}

core::Status Session::AddThread(pid_t tid) {
  if (core::Status s = tracee_.WaitNewThread(tid); !s.ok()) return s;
  Thread t;
  t.tid = tid;
  t.index = static_cast<std::uint32_t>(threads_.size());
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
  started_.push_back(threads_.size());
  threads_.push_back(std::move(t));
  return core::Status::Ok();
}

void Session::Capture(std::span<const Range> ranges) {
  for (const Range& r : ranges) {
    const std::size_t at = data_.size();
    data_.resize(at + r.size);
    const std::size_t n = tracee_.ReadMemory(r.start, std::span(data_).subspan(at, r.size));
    data_.resize(at + n);
    if (n == 0) continue;
    if (!r.maybe) {
      space_.Note(r.start, std::span(data_).subspan(at, n));
      spans_.push_back({r.start, n});
      continue;
    }
    // A maybe-write: keep only what differs from the trace's view.
    changed_.clear();
    space_.Changed(r.start, std::span(data_).subspan(at, n), &changed_);
    std::vector<std::uint8_t> bytes(data_.begin() + at, data_.end());
    data_.resize(at);
    for (const Range& c : changed_) {
      const std::size_t from = c.start - r.start;
      data_.insert(data_.end(), bytes.begin() + from, bytes.begin() + from + c.size);
      space_.Note(c.start, std::span(bytes).subspan(from, c.size));
      spans_.push_back({c.start, c.size});
    }
  }
}

void Session::CollectReads(const Decoded& d, const user_regs_struct& after) {
  reads_.clear();
  if (!options_.reads) return;
  read_ranges_.clear();
  InsnDecoder::Reads(d, regs_, after, &read_ranges_);
  std::uint64_t total = 0;
  for (const Range& r : read_ranges_) total += r.size;
  read_data_.assign(total, 0);
  std::size_t at = 0;
  for (const Range& r : read_ranges_) {
    const std::span<std::uint8_t> out = std::span(read_data_).subspan(at, r.size);
    if (options_.read_values) space_.ReadTraced(tracee_, r.start, out);
    reads_.push_back({r.start, out});
    at += r.size;
  }
}

core::Status Session::OnStepped(core::Address pc, const Decoded& d) {
  user_regs_struct after{};
  if (core::Status s = tracee_.GetRegs(&after); !s.ok()) return s;
  if (d.syscall && (after.r11 & (kTf | kRf))) {
    // Single-stepping leaks TF into the flags `syscall` saves in r11.
    after.r11 &= ~(kTf | kRf);
    if (core::Status s = tracee_.SetRegs(after); !s.ok()) return s;
  }
  if (d.pushf) {
    std::uint64_t flags = 0;
    if (tracee_.ReadMemory(after.rsp, {reinterpret_cast<std::uint8_t*>(&flags), 8}) == 8 &&
        (flags & (kTf | kRf))) {
      flags &= ~(kTf | kRf);
      if (core::Status s =
              tracee_.WriteMemory(after.rsp, {reinterpret_cast<std::uint8_t*>(&flags), 8});
          !s.ok())
        return s;
    }
  }
  next_slots_ = slots_;
  layout_.CollectGprs(after, next_slots_);
  const bool fetch_fp = d.fp || d.syscall;
  if (fetch_fp) {
    if (core::Status s = tracee_.GetXState(&xstate_); !s.ok()) return s;
    layout_.CollectFp(xstate_, next_slots_);
  }
  changes_.clear();
  DiffRegisters(layout_, slots_, next_slots_, 0, fetch_fp ? layout_.count() : layout_.gpr_count(),
                &changes_);
  data_.clear();
  spans_.clear();
  ranges_.clear();
  SyscallRecord sys;
  MapChanges maps;
  if (d.syscall) {
    if (core::Status s = SyscallEffects(regs_, after, &sys, &maps); !s.ok()) return s;
  } else {
    // Reads first: their contents are the trace's view before this step.
    CollectReads(d, after);
    InsnDecoder::Writes(d, regs_, after, &ranges_);
    if (d.unknown_writes) {
      ++result_.full_diffs;
      space_.Diff(tracee_, &ranges_);
    }
    for (const Range& r : ranges_) {
      const Mapping* m = space_.Find(r.start);
      if (m && m->exec) decoder_.Invalidate();  // self-modifying code
    }
    Capture(ranges_);
  }
  slots_.swap(next_slots_);
  regs_ = after;
  last_pc_ = pc;
  ++result_.instructions;
  if (options_.check_interval && result_.instructions % options_.check_interval == 0) {
    if (core::Status s = Check(fetch_fp); !s.ok()) return s;
  }
  writes_.clear();
  for (const auto& [address, size] : spans_) {
    writes_.push_back({address, std::span<const std::uint8_t>(data_).subspan(0, 0)});
  }
  std::size_t offset = 0;
  for (std::size_t i = 0; i < spans_.size(); ++i) {
    writes_[i].data = std::span<const std::uint8_t>(data_).subspan(offset, spans_[i].second);
    offset += spans_[i].second;
  }
  const std::uint8_t size = d.size ? d.size : static_cast<std::uint8_t>(0);
  SinkFollows();
  if (!d.syscall) {
    sink_.OnInstruction({pc, size, changes_, writes_, reads_});
    return core::Status::Ok();
  }
  ++result_.syscalls;
  sink_.OnInstruction({pc, size, {}, {}, {}});
  sys.writes = writes_;
  sys.registers = changes_;
  sys.unmapped = maps.unmapped;
  sys.mapped = maps.mapped;
  sys.protected_ = maps.reprotected;
  sink_.OnSyscall(sys);
  return core::Status::Ok();
}

core::Status Session::SyscallEffects(const user_regs_struct& before, const user_regs_struct& after,
                                     SyscallRecord* r, MapChanges* maps) {
  const std::uint64_t nr = before.rax;
  const std::uint64_t args[6] = {before.rdi, before.rsi, before.rdx,
                                 before.r10, before.r8,  before.r9};
  r->number = static_cast<std::uint32_t>(nr);
  r->result = after.rax;
  std::copy(std::begin(args), std::end(args), r->args);
  const bool failed = after.rax > ~std::uint64_t{4095};
  if (ChangesMappings(nr) && !failed) {
    std::vector<Range> fresh;
    const auto pages = [](std::uint64_t n) { return (n + kPage - 1) / kPage * kPage; };
    if (nr == kSysMmap) fresh.push_back({after.rax, pages(args[1])});
    if (nr == kSysMremap) fresh.push_back({after.rax, pages(args[2])});
    if (core::Status s = space_.Update(tracee_, fresh, maps); !s.ok()) return s;
    decoder_.Invalidate();
    // New mappings' contents: only the non-zero runs (a fresh mapping reads as zeros).
    for (const Range& c : maps->contents) {
      std::vector<std::uint8_t> buf(c.size);
      tracee_.ReadMemoryZeroFill(c.start, buf);
      ForEachNonZeroRun(buf, [&](std::size_t offset, std::size_t length) {
        data_.insert(data_.end(), buf.begin() + offset, buf.begin() + offset + length);
        spans_.push_back({c.start + offset, length});
      });
    }
  }
  if (KnownOutputs(nr, args, after.rax, &ranges_)) {
    Capture(ranges_);
  } else {
    ++result_.full_diffs;
    ranges_.clear();
    space_.Diff(tracee_, &ranges_);
    Capture(ranges_);
  }
  return core::Status::Ok();
}

core::Status Session::Check(bool fp_fetched) {
  std::vector<Range> missed;
  space_.Diff(tracee_, &missed);
  for (const Range& r : missed) {
    result_.missed_bytes += r.size;
    if (getenv("BACKSTEP_RECORD_DEBUG")) {
      std::fprintf(
          stderr, "record: missed write 0x%llx+%llu by instruction %llu or before (pc 0x%llx)\n",
          static_cast<unsigned long long>(r.start), static_cast<unsigned long long>(r.size),
          static_cast<unsigned long long>(result_.instructions),
          static_cast<unsigned long long>(last_pc_));
    }
  }
  Capture(missed);
  // A parked thread is running in the kernel: its FP state cannot be read.
  if (!fp_fetched && !threads_[current_].parked) {
    if (core::Status s = tracee_.GetXState(&xstate_); !s.ok()) return s;
    std::vector<core::RegisterWrite> fp = slots_;
    layout_.CollectFp(xstate_, fp);
    const std::size_t before = changes_.size();
    DiffRegisters(layout_, slots_, fp, layout_.gpr_count(), layout_.count(), &changes_);
    result_.missed_registers += changes_.size() - before;
    slots_ = fp;
  }
  return core::Status::Ok();
}

core::Status Session::OnSignal(core::Address pc, const Decoded& d, int sig, bool* done) {
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
    *done = true;
    return core::Status::Ok();
  }
  const std::string name = SignalName(sig);
  siginfo_.fill(0);
  ptrace(PTRACE_GETSIGINFO, tracee_.thread(), nullptr, siginfo_.data());
  // SIGSTOP cannot be handled; the others stop only by default.
  if (HandlesSignal(tracee_.pid(), sig) && sig != SIGSTOP) {
    return DeliverHandled(pc, d, sig, done);
  }
  user_regs_struct now{};
  if (core::Status s = tracee_.GetRegs(&now); !s.ok()) return s;
  if (InstructionRan(regs_, now)) {
    // The instruction ran first (a system call that returned as the signal
    // came, SIGCHLD after wait4): record it, then deliver.
    if (!d.syscall || IsRestart(now.rax)) {
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
  SinkFollows();
  sink_.OnSignal({sig, regs_.rip, siginfo_, {}, {}});
  if (StopsByDefault(sig) && !SignalInMask(tracee_.pid(), "SigIgn:", sig, false)) {
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

core::Status Session::DeliverHandled(core::Address pc, const Decoded& d, int sig, bool* done) {
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
  core::Expected<Stop> stop = tracee_.Step(sig);
  if (!stop.ok()) return stop.status();
  if (stop->kind == Stop::kExited || stop->kind == Stop::kKilled) {
    Stop end = *stop;
    if (tracee_.alive()) tracee_.ReapAll(&end);
    *done = true;
    result_.end =
        end.kind == Stop::kExited ? RecordResult::End::kExited : RecordResult::End::kKilled;
    result_.exit_code = end.exit_code;
    result_.signal = end.signal;
    return core::Status::Ok();
  }
  if (stop->kind != Stop::kStepped) {
    return core::Status::Unsupported("another signal or event arrived while " + name +
                                     " was delivered: not supported yet");
  }
  user_regs_struct after{};
  if (core::Status s = tracee_.GetRegs(&after); !s.ok()) return s;
  // The frame's saved rflags carry the TF of the step: the program never sees it.
  if (core::Status s = ClearStepFlagsInSignalFrame(tracee_, after.rsp); !s.ok()) return s;
  next_slots_ = slots_;
  layout_.CollectGprs(after, next_slots_);
  if (core::Status s = tracee_.GetXState(&xstate_); !s.ok()) return s;
  layout_.CollectFp(xstate_, next_slots_);
  changes_.clear();
  DiffRegisters(layout_, slots_, next_slots_, 0, layout_.count(), &changes_);
  // The frame: every byte of writable memory that changed.
  data_.clear();
  spans_.clear();
  ranges_.clear();
  ++result_.full_diffs;
  space_.Diff(tracee_, &ranges_);
  Capture(ranges_);
  writes_.clear();
  std::size_t offset = 0;
  for (const auto& [address, size] : spans_) {
    writes_.push_back({address, std::span<const std::uint8_t>(data_).subspan(offset, size)});
    offset += size;
  }
  slots_.swap(next_slots_);
  regs_ = after;
  ++result_.signals;
  SinkFollows();
  sink_.OnSignal({sig, after.rip, siginfo_, changes_, writes_});
  return core::Status::Ok();
}

core::Status Session::OnEvent(const Stop& stop) {
  unsigned long msg = 0;
  ptrace(PTRACE_GETEVENTMSG, tracee_.thread(), nullptr, &msg);
  if (stop.event == PTRACE_EVENT_EXEC) {
    return core::Status::Unsupported(
        "the program calls execve: the trace ends before it (a UCIR trace holds one "
        "executable's image; recording across exec is not supported)");
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

core::Status Session::EmulateRdtsc(core::Address pc, const Decoded& d) {
  user_regs_struct after = regs_;
  unsigned aux = 0;
  const std::uint64_t tsc = d.rdtscp ? __rdtscp(&aux) : __rdtsc();
  after.rax = tsc & 0xffffffff;
  after.rdx = tsc >> 32;
  if (d.rdtscp) after.rcx = aux;
  after.rip = pc + d.size;
  if (core::Status s = tracee_.SetRegs(after); !s.ok()) return s;
  Decoded plain = d;
  plain.rdtsc = plain.rdtscp = false;
  return OnStepped(pc, plain);
}

core::Status Session::EmulateSyscallFailure(core::Address pc, const Decoded& d,
                                            std::int64_t error) {
  // What `syscall` would leave: rax = -errno, rcx = next rip, r11 = rflags.
  user_regs_struct after = regs_;
  after.rax = static_cast<std::uint64_t>(error);
  after.rcx = pc + d.size;
  after.r11 = regs_.eflags & ~(kTf | kRf);
  after.rip = pc + d.size;
  if (core::Status s = tracee_.SetRegs(after); !s.ok()) return s;
  return OnStepped(pc, d);
}

}  // namespace

core::Expected<RecordResult> Record(const RecordOptions& options, RecordingSink& sink) {
  core::Expected<Tracee> tracee = Tracee::Spawn(options.spawn);
  if (!tracee.ok()) return tracee.status();
  RecordOptions tuned = options;
  // NOTE: BACKSTEP_RECORD_CHECK=N checks every N instructions (debugging the decoder).
  if (const char* check = getenv("BACKSTEP_RECORD_CHECK"))
    tuned.check_interval = std::stoull(check);
  Session session(tuned, sink, std::move(*tracee));
  return RunSession(session, sink);
}

}  // namespace backstep::record
