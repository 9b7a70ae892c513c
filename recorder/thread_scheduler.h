// ThreadScheduler: which of the program's threads runs next, for an engine
// that records them one at a time (the ptrace engine; any engine that
// serialises threads).
//
// Threads are numbered in creation order (the leader is 0) and never
// removed, so a thread's number is both its position here and its number in
// the sink (RecordingSink::OnThreadSwitch). One thread is current: its
// registers live in the engine (the `regs`/`slots` SwitchTo() swaps), the
// others' are saved here. A thread is runnable unless it exited or is
// parked (resumed into a system call that may block, which is recorded when
// it returns).
//
// Round robin, so that the order is deterministic: a turn ends after
// kTimeSlice instructions or when the current thread cannot run; the next
// runnable thread after it gets the next turn.
//
// The sink is told which thread its events are about (SinkFollowCurrent)
// only when it changes, lazily: a switch without events costs nothing.
//
// Thread-safety: one thread at a time.
#pragma once

#include <sys/types.h>
#include <sys/user.h>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

#include "backstep/core/register_file.h"
#include "recorder/insn_decoder.h"
#include "recorder/recording_sink.h"

namespace backstep::record {

class ThreadScheduler {
 public:
  // Instructions a thread runs before the next one gets its turn (when no
  // thread blocks first).
  static constexpr std::uint64_t kTimeSlice = 50000;

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

  explicit ThreadScheduler(pid_t leader);

  std::size_t size() const { return threads_.size(); }
  bool several() const { return threads_.size() > 1; }
  Thread& at(std::size_t i) { return threads_[i]; }
  const Thread& at(std::size_t i) const { return threads_[i]; }
  std::size_t current_index() const { return current_; }
  Thread& current() { return threads_[current_]; }
  bool Runnable(std::size_t i) const { return !threads_[i].parked && !threads_[i].exited; }

  // Adds a thread (t.index is set); it is announced to the sink after the
  // step that created it (TakeStarted).
  void Add(Thread t);
  // The threads added since the last call, in order.
  std::vector<std::size_t> TakeStarted();

  // Counts an instruction of the current thread's turn.
  void CountInstruction() { ++slice_; }
  // Whether the current thread's turn is over: it cannot run, or used its
  // slice.
  bool TurnOver() const { return !Runnable(current_) || slice_ >= kTimeSlice; }
  // The next runnable thread after the current one (round robin, possibly
  // itself); nullopt when every thread waits in the kernel.
  std::optional<std::size_t> NextRunnable() const;
  // Makes thread i current: the live `regs` and `slots` are saved into the
  // current thread and i's are loaded into them. Returns i's tid (for
  // Tracee::Select). `new_turn`: i starts a turn (a fresh slice).
  pid_t SwitchTo(std::size_t i, user_regs_struct* regs, std::vector<core::RegisterWrite>* slots,
                 bool new_turn);

  // When the sink's events were about another thread than the current one:
  // tells the sink (OnThreadSwitch, with the other thread's next pc unless
  // it exited) and remembers.
  void SinkFollowCurrent(RecordingSink& sink);
  // The sink was told about thread `index` by other means (OnThreadStart).
  void SinkFollows(std::uint32_t index) { sink_thread_ = index; }

 private:
  std::vector<Thread> threads_;
  std::size_t current_ = 0;
  std::uint32_t sink_thread_ = 0;     // the thread the sink's calls are about
  std::uint64_t slice_ = 0;           // instructions of the current thread's turn
  std::vector<std::size_t> started_;  // new threads to announce after the clone
};

}  // namespace backstep::record
