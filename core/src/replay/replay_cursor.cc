#include "replay/replay_cursor.h"

#include <algorithm>
#include <cassert>
#include <cstring>

#include "paging/x86_paging.h"
#include "replay/trace_index_of.h"

namespace backstep::core {

ReplayCursor::ReplayCursor(const Trace& trace, std::unique_ptr<TraceReader> reader)
    : trace_(trace), index_(TraceIndexOf(trace)), reader_(std::move(reader)) {
  regs_.assign(index_.thread_count(), RegisterFile(trace.arch()));
  describes_mappings_ = trace.header().describes_mappings && !index_.physical();
  TraceReader* r = reader_.get();
  image_ = [r](Address a, std::span<std::uint8_t> out, std::span<std::uint8_t> known) {
    r->ReadInitialMemory(a, out, known);
  };
}

Status ReplayCursor::Init() { return LoadKeyframe(0); }

Status ReplayCursor::ApplyNext() {
  assert(position_ < index_.event_count());
  if (event_at_ != position_) {
    event_reader_position_ = reader_->Tell();
    Expected<bool> more = reader_->Next(&event_);
    if (!more.ok()) {
      return more.status().Annotate("replaying event " + std::to_string(position_));
    }
    if (!*more) {
      return Status::Corruption(trace_.path() + ": trace ends at event " +
                                std::to_string(position_) + ", before the index's end");
    }
    event_at_ = position_;
  }
  if (!last_thread_ || last_thread_->first != event_.thread.value) {
    const std::optional<std::size_t> i = index_.ThreadIndexOf(event_.thread);
    if (i) last_thread_ = std::pair(event_.thread.value, *i);
  }
  const std::optional<std::size_t> thread =
      last_thread_ && last_thread_->first == event_.thread.value
          ? std::optional<std::size_t>(last_thread_->second)
          : std::nullopt;
  if (!thread) {
    return Status::Corruption(trace_.path() + ": event " + std::to_string(position_) +
                              " runs a thread the index does not know");
  }
  RegisterFile& file = regs_[*thread];
  if (!journaling_) {
    // Plain replay (Seek): no undo information, the journal stays empty.
    if (event_.flags & kEventClearsRegisters) file.Clear();
    for (const RegisterWrite& w : event_.registers) file.Apply(w);
    PatchWrites(false);
    journal_.Rebase(++position_);
    reader_at_ = position_;
    event_at_ = kNoEvent;
    return Status();
  }
  if (journal_.Full(index_.keyframe_interval())) ClearJournal();
  journal_.Begin(event_reader_position_, (event_.flags & kEventClearsMemory) != 0);
  if (journal_.recording_writes()) {
    PatchWrites(true);
  } else {
    journal_.SkipWrites();  // no page is cached: nothing to patch
  }
  journal_.ApplyRegisters(static_cast<std::uint32_t>(*thread), file, event_, trace_.arch());
  ++position_;
  reader_at_ = position_;
  event_at_ = kNoEvent;
  return Status();
}

void ReplayCursor::UndoLast() {
  const UndoJournal::Entry undone = journal_.UndoLast(
      regs_, trace_.arch(), [this](Address address, std::uint32_t size, const std::uint8_t* old) {
        PageCache::Page* page = pages_.Find(address & ~(kPageSize - 1));
        if (page == nullptr) return;
        if (old == nullptr) {
          page->valid = false;  // cannot happen (LoadPage's contract); stay correct anyway
          return;
        }
        const std::size_t offset = address & (kPageSize - 1);
        std::memcpy(page->values() + offset, old, size);
        std::memcpy(page->known() + offset, old + size, size);
      });
  if (undone.clears_memory) pages_.Drop();
  --position_;
  // NOTE: Seek on a position the reader produced itself; readers only fail
  // on foreign positions, so the status is not worth propagating here.
  Status s = reader_->Seek(undone.reader_position);
  (void)s;
  reader_at_ = position_;
  event_at_ = kNoEvent;
}

Status ReplayCursor::StepForward() {
  if (position_ == index_.event_count()) {
    return Status::OutOfRange("step forward at the end of the trace (position " +
                              std::to_string(position_) + ")");
  }
  return ApplyNext();
}

Status ReplayCursor::StepBackward() {
  if (position_ == 0) return Status::OutOfRange("step backward at position 0");
  if (position_ > journal_.base()) {
    UndoLast();
    return Status();
  }
  return SeekJournaled(position_ - 1);
}

ThreadId ReplayCursor::current_thread() const {
  const std::uint64_t n = index_.event_count();
  if (event_at_ == position_) return event_.thread;
  if (n == 0) return index_.thread_count() ? ThreadId(index_.thread(0).tid) : ThreadId();
  return ThreadId(index_.thread(index_.ThreadIndexAt(std::min(position_, n - 1))).tid);
}

std::vector<ThreadId> ReplayCursor::threads() const {
  std::vector<ThreadId> out;
  for (std::size_t i = 0; i < index_.thread_count(); ++i) {
    const ThreadRecord t = index_.thread(i);
    if ((t.flags & 1) || t.first_event <= position_) out.push_back(ThreadId(t.tid));
  }
  std::sort(out.begin(), out.end());
  return out;
}

Expected<const RegisterFile*> ReplayCursor::Registers(ThreadId thread) const {
  const std::optional<std::size_t> i = index_.ThreadIndexOf(thread);
  if (!i)
    return Status::NotFound("thread " + std::to_string(thread.value) + " is not in the trace");
  return &regs_[*i];
}

std::optional<Address> ReplayCursor::Pc(ThreadId thread) const {
  const std::optional<std::size_t> i = index_.ThreadIndexOf(thread);
  const RegisterId pc = trace_.arch().pc();
  if (!i || pc == kNoRegister || !regs_[*i].known(pc)) return std::nullopt;
  return regs_[*i].u64(pc);
}

Expected<const Event*> ReplayCursor::CurrentEvent() {
  if (position_ == index_.event_count()) {
    return Status::NotFound("no event at the end of the trace (position " +
                            std::to_string(position_) + ")");
  }
  if (event_at_ != position_) {
    event_reader_position_ = reader_->Tell();
    Expected<bool> more = reader_->Next(&event_);
    if (!more.ok()) return more.status().Annotate("decoding event " + std::to_string(position_));
    if (!*more) {
      return Status::Corruption(trace_.path() + ": trace ends at event " +
                                std::to_string(position_));
    }
    event_at_ = position_;
    reader_at_ = position_ + 1;
  }
  return &event_;
}

}  // namespace backstep::core
