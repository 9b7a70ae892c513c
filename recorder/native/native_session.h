// NativeSession: the record phase of `backstep record --engine native`
// (native_recorder.h) for one program: it runs the program under ptrace with
// the seccomp trap (seccomp_trap.h), logs each system call's entry and exit
// registers and the memory the kernel wrote, emulates rdtsc and answers
// cpuid, holds signals until the next system call returns, and snapshots
// the program at system call stops (snapshot.h). Internal to the engine:
// RecordNative (native_recorder.cc) is its one user.
//
// Split by concern: native_session.cc (start, the stop loop, signals,
// snapshots), native_syscall_stop.cc (a system call's stop: OnSyscall and
// the memory it wrote).
//
// Thread-safety: one thread, the program's tracer.
#pragma once

#include <signal.h>
#include <sys/uio.h>
#include <sys/user.h>
#include <time.h>

#include <atomic>
#include <cstdint>
#include <optional>
#include <set>
#include <stop_token>
#include <string>
#include <utility>
#include <vector>

#include "backstep/core/expected.h"
#include "recorder/address_space.h"
#include "recorder/given_answers.h"
#include "recorder/insn_decoder.h"
#include "recorder/native/native_log.h"
#include "recorder/native/native_recorder.h"
#include "recorder/native/snapshot.h"
#include "recorder/native/syscall_buffer.h"
#include "recorder/tracee.h"

namespace backstep::record {

class NativeSession {
 public:
  NativeSession(const NativeOptions& options, Tracee tracee, NativeLog::Cpuid cpuid,
                std::string log_path)
      : options_(options),
        tracee_(std::move(tracee)),
        pid_(tracee_.pid()),
        log_path_(std::move(log_path)) {
    log_.cpuid = cpuid;
  }

  core::Status Start();
  core::Status Run();
  NativeLog& log() { return log_; }
  NativeResult& result() { return result_; }
  int cpu() const { return cpu_; }  // the program's (after Start)

 private:
  core::Status OnSyscall();
  // At a signal-delivery-stop: delivers it now (*deliver) when it is the one
  // pending at the last system call's return, and logs it there.
  bool DeliverAtSyscallReturn(int sig, const user_regs_struct& regs, int* deliver);
  bool SignalPending() const;
  // At the exit stop: the memory the kernel wrote for `call`.
  void CollectWrites(LoggedSyscall* call, bool full_diff);
  core::Status EmulateRdtsc(const user_regs_struct& regs, bool* done);
  // The program's next stop; its children's meanwhile (OnChild).
  core::Expected<int> Wait();
  // A stop or the end of a child of the program's (or of theirs):
  // ServeUnrecordedChild, and children_ kept.
  void OnChild(pid_t child, int status);
  void Finish(int status);
  // At the exit stop of the call just logged: a snapshot when one is due.
  core::Status MaybeSnapshot();
  bool SnapshotDue() const;
  // The buffer's calls (syscall_buffer.h) into the log, before anything
  // else is logged; at its flush stop, only that.
  core::Status DrainBuffer();
  core::Status OnFlush(const user_regs_struct& regs);
  // The program's calls stop while a signal is held or a snapshot is due.
  core::Status UpdateTraceNext();
  // While the program runs, on a thread of its own: when a snapshot is due
  // by the program's CPU time, makes its next buffered call stop (a program
  // whose calls are all buffered would else never stop for one).
  void SnapshotClock(std::stop_token stop);
  // A mapping call that would unmap or replace the buffer's regions.
  core::Status RefuseBufferOverlap(const user_regs_struct& entry);
  // rt_sigaction / sigaltstack at entry: what the call would set (kept
  // in signals_ when it succeeds).
  void ReadSignalSetup(const user_regs_struct& entry);

  const NativeOptions& options_;
  GivenAnswers given_{GivenInputs{options_.getrandom, options_.kernel_answers,
                                  options_.random_reads, options_.file_stats}};
  Tracee tracee_;
  const pid_t pid_;
  const std::string log_path_;
  NativeLog log_;
  SignalSetup signals_;
  std::optional<std::pair<int, KernelSigaction>> new_action_;
  std::vector<std::uint8_t> new_altstack_;
  // The program's CPU time (its process CPU clock, user and system), the
  // measure of --snapshot-ms: the recorder's stops and the snapshots
  // themselves do not count, so an interval holds about as many
  // instructions however slow the record phase is (Start sets the clock).
  std::uint64_t ProgramCpuNs() const;
  clockid_t program_clock_ = CLOCK_MONOTONIC;
  std::atomic<std::uint64_t> last_snapshot_ns_{0};  // read by SnapshotClock too
  std::uint64_t last_snapshot_syscall_ = 0;
  NativeResult result_;
  AddressSpace entry_memory_;  // writable memory at the entry of an unknown system call
  std::vector<Range> ranges_;  // the current call's output buffers (reused: no allocation)
  std::vector<iovec> local_iov_, remote_iov_;
  // Signals that arrived while the program computed, with their siginfo:
  // the first is queued again when the next system call returns.
  std::vector<siginfo_t> held_;
  std::optional<siginfo_t> requeued_;  // the one queued again (its siginfo restored)
  // The program is at a system call's return with a signal pending: the
  // next stop, at `exit_rip_`, delivers it before any instruction runs.
  bool pending_at_exit_ = false;
  // A call a discarded signal interrupted (not logged): the kernel restarts it.
  std::optional<LoggedSyscall> interrupted_;
  std::uint64_t exit_rip_ = 0;
  bool ended_ = false;
  // The program's descendants still attached: waited for at the end. Only
  // they: the recorder's other children (a test's, a caller's) are not its.
  std::set<pid_t> children_;
  int cpu_ = 0;
  std::optional<SyscallBuffer> buffer_;
  user_regs_struct like_{};  // the registers of the last stop (Drain's segments and bases)
  bool snapshot_wanted_ = false;
  bool buffer_off_ = false;  // a child shares the program's memory (every call traced)
  std::atomic<bool> clock_stopped_{false};  // SnapshotClock set "trace next" in the program
};

}  // namespace backstep::record
