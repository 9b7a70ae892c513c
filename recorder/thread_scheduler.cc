#include "recorder/thread_scheduler.h"

#include <utility>

namespace backstep::record {

ThreadScheduler::ThreadScheduler(pid_t leader) {
  Thread t;
  t.tid = leader;
  threads_.push_back(std::move(t));
}

void ThreadScheduler::Add(Thread t) {
  t.index = static_cast<std::uint32_t>(threads_.size());
  started_.push_back(threads_.size());
  threads_.push_back(std::move(t));
}

std::vector<std::size_t> ThreadScheduler::TakeStarted() {
  std::vector<std::size_t> started;
  started.swap(started_);
  return started;
}

std::optional<std::size_t> ThreadScheduler::NextRunnable() const {
  for (std::size_t k = 1; k <= threads_.size(); ++k) {
    const std::size_t j = (current_ + k) % threads_.size();
    if (Runnable(j)) return j;
  }
  return std::nullopt;
}

pid_t ThreadScheduler::SwitchTo(std::size_t i, user_regs_struct* regs,
                                std::vector<core::RegisterWrite>* slots, bool new_turn) {
  if (new_turn) slice_ = 0;
  if (i != current_) {
    Thread& from = threads_[current_];
    from.regs = *regs;
    from.slots.swap(*slots);
    current_ = i;
    Thread& to = threads_[i];
    *regs = to.regs;
    slots->swap(to.slots);
  }
  return threads_[i].tid;
}

void ThreadScheduler::SinkFollowCurrent(RecordingSink& sink) {
  const Thread& t = threads_[current_];
  if (t.index == sink_thread_) return;
  const Thread& from = threads_[sink_thread_];  // index == position: threads are never removed
  std::optional<core::Address> next;
  if (!from.exited) next = from.regs.rip;  // saved: it is not the current thread
  sink.OnThreadSwitch(t.index, next);
  sink_thread_ = t.index;
}

}  // namespace backstep::record
