// PtraceSession: the ptrace engine's recording (recorder.h describes what it
// records and refuses), one class over several files, each a part of one
// step:
//   ptrace_session.cc  Start, Run and StepOnce: take a turn, decode, run the
//                      instruction (a step, or answered without running it),
//                      dispatch on how the step stopped;
//   ptrace_effects.cc  what a step changed: registers, writes, reads, a
//                      system call's effects, the periodic check;
//   ptrace_threads.cc  threads (thread_scheduler.h): turns, parked system calls,
//                      new threads, the process's end;
//   ptrace_signals.cc  signals (signal_delivery.h), and events the engine
//                      refuses;
//   ptrace_children.cc fork/vfork/clone events during a step;
//   ptrace_exec.cc     execve: the new image continues the recording.
// Shared with the other engines: start-up (session_start.h), scheduling
// (thread_scheduler.h), signal delivery (signal_delivery.h,
// signal_disposition.h) and write capture (write_capture.h).
//
// The run ends (ended()) when the program exits or is killed, on Ctrl-C, or
// at max_instructions; result() says which.
//
// Thread-safety: one recording per thread (ptrace is per-thread).
#pragma once

#include <sys/user.h>

#include <array>
#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "backstep/core/expected.h"
#include "recorder/address_space.h"
#include "recorder/cpu_state.h"
#include "recorder/insn_decoder.h"
#include "recorder/recorder.h"
#include "recorder/recording_sink.h"
#include "recorder/thread_scheduler.h"
#include "recorder/tracee.h"
#include "recorder/untraced.h"
#include "recorder/write_capture.h"

namespace backstep::record {

class PtraceSession {
 public:
  PtraceSession(const RecordOptions& options, RecordingSink& sink, Tracee tracee)
      : options_(options), sink_(sink), tracee_(std::move(tracee)), threads_(tracee_.pid()) {}

  core::Status Start();
  // Runs to the end; the result's End says why it stopped.
  core::Status Run();
  RecordResult& result() { return result_; }

 private:
  static constexpr std::uint64_t kTf = 1u << 8, kRf = 1u << 16;

  // --- one step (ptrace_session.cc) ---
  core::Status StepOnce();
  const Decoded& DecodeAt(core::Address pc);
  // A system call of a multi-threaded program that needs the scheduler
  // (exit_group, the leader's exit, a call that may block): handled, or
  // nullopt when it is stepped as any other.
  std::optional<core::Status> ThreadSyscall(core::Address pc, const Decoded& d);
  // Steps the instruction and follows the events it raised (ptrace_children.cc).
  core::Expected<Stop> StepInstruction(core::Address pc, const Decoded& d);
  // What to do with the stop that ended the step.
  core::Status OnStop(core::Address pc, const Decoded& d, const Stop& stop);
  // The program ended (`end`: its exit or fatal signal): reaps every
  // thread, sets result_ and ended_.
  void ProgramEnded(Stop end);

  // --- effects of a step (ptrace_effects.cc) ---
  core::Status OnStepped(core::Address pc, const Decoded& d);
  // Reads `ranges` into writes_ (and the shadow).
  void Capture(std::span<const Range> ranges);
  // The reads of the instruction just stepped into reads_.
  void CollectReads(const Decoded& d, const user_regs_struct& after);
  core::Status SyscallEffects(const user_regs_struct& before, const user_regs_struct& after,
                              SyscallRecord* record, MapChanges* maps);
  core::Status Check(bool fp_fetched);
  core::Status EmulateRdtsc(core::Address pc, const Decoded& d);
  core::Status EmulateSyscallFailure(core::Address pc, const Decoded& d, std::int64_t error);

  // --- signals and events (ptrace_signals.cc) ---
  core::Status OnSignal(core::Address pc, const Decoded& d, int sig);
  // Runs the kernel's delivery of a signal the program handles (stopping at
  // the handler's first instruction) and records it.
  core::Status DeliverHandled(core::Address pc, const Decoded& d, int sig);
  core::Status OnEvent(const Stop& stop);

  // --- exec (ptrace_exec.cc) ---
  // The `syscall` at `pc` replaced the image (exec_entry_): records the new one.
  core::Status OnExec(core::Address pc, const Decoded& d);

  // --- threads (ptrace_threads.cc) ---
  // Makes thread i current: regs_/slots_ and the tracee's selection.
  void SwitchTo(std::size_t i, bool new_turn);
  // Picks the next runnable thread (round robin), waiting for a parked one
  // when none can run.
  core::Status Schedule();
  // Records the parked system calls that have returned (`wait`: at least one).
  core::Status CollectParked(bool wait);
  core::Status FinishParked(std::size_t i, const Stop& stop);
  // Lets a system call that may block run while the other threads step.
  core::Status Park(core::Address pc, const Decoded& d);
  // A CLONE event during the current thread's step: the new thread.
  core::Status AddThread(pid_t tid);
  // Announces the threads the last step created.
  void AnnounceStarted();
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
  bool ended_ = false;       // the run is over: result_.end says why
  Traps traps_;              // rdtsc and (--cpuid portable) CPUID faulting (Start)
  user_regs_struct regs_{};  // before the next instruction
  std::vector<core::RegisterWrite> slots_, next_slots_, changes_;
  std::vector<std::uint8_t> xstate_;
  std::vector<std::uint8_t> gather_xstate_;  // before a gather's step: its index and mask
  std::vector<Range> ranges_;
  WriteBuffer writes_{/*merge_contiguous=*/false};
  std::vector<Range> read_ranges_;
  std::vector<std::uint8_t> read_data_;  // contents (or zeros) of reads_
  std::vector<core::MemoryAccess> reads_;
  int pending_signal_ = 0;
  std::array<std::uint8_t, 128> siginfo_{};  // of the signal OnSignal handles
  core::Address last_pc_ = 0;
  // Set when the last step's system call was a successful execve: the new
  // image's entry point, where the program stopped at the exec event.
  std::optional<core::Address> exec_entry_;
  ThreadScheduler threads_;
};

}  // namespace backstep::record
