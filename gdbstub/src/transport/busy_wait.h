// BusyWait: whether a connection thread waits for its client's next packet
// awake (polling without sleeping) or asleep, and for how long awake.
//
// A debugger stepping one instruction at a time sends its next packet tens
// of microseconds after our reply. A thread that sleeps in poll(2) in
// between costs a wake-up per packet, and on a VM (no halt polling, an
// inter-processor interrupt and a VM exit to wake an idle CPU) that wake-up
// costs more than the packet's work: measured, `reverse-stepi 2000` took
// 0.37-0.54 s asleep and 0.17-0.20 s awake (docs/benchmarks.md). Awake waits
// are bounded by `budget`, and adaptive: a wait that runs out of budget
// (the user is reading, gdb is loading symbols) switches them off until a
// packet comes within `budget` of a reply again, so an idle session costs no
// CPU beyond one budget.
//
// Thread-safety: none (one per connection, used by its thread).
#pragma once

#include <chrono>

namespace backstep::gdbstub {

class BusyWait {
 public:
  using Clock = std::chrono::steady_clock;
  // budget 0: never awake.
  explicit BusyWait(std::chrono::microseconds budget)
      : budget_(budget), awake_(budget.count() > 0) {}

  // `budget`, or 0 when this process may run on one CPU only
  // (sched_getaffinity).
  static std::chrono::microseconds Allowed(std::chrono::microseconds budget);

  // Whether the next wait should start awake, and until when.
  bool awake() const { return awake_; }
  Clock::time_point Deadline(Clock::time_point now) const { return now + budget_; }

  // Outcomes: an awake wait that saw the packet (`arrived`) or ran out of
  // budget; a sleeping wait whose packet came `gap` after our last reply.
  void AfterAwake(bool arrived) { awake_ = arrived; }
  void AfterSleep(Clock::duration gap) { awake_ = budget_.count() > 0 && gap < budget_; }

 private:
  std::chrono::microseconds budget_;
  bool awake_;
};

}  // namespace backstep::gdbstub
