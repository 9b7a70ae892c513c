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
  TraceReader* r = reader_.get();
  image_ = [r](Address a, std::span<std::uint8_t> out, std::span<std::uint8_t> known) {
    r->ReadInitialMemory(a, out, known);
  };
}

Status ReplayCursor::Init() { return LoadKeyframe(0); }

void ReplayCursor::ClearJournal() {
  journal_base_ = position_;
  journal_.clear();
  undo_.clear();
  undo_bytes_.clear();
  writes_.clear();
  write_bytes_.clear();
  old_bytes_.clear();
  unrecorded_ = 0;
}

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
    journal_base_ = ++position_;
    reader_at_ = position_;
    event_at_ = kNoEvent;
    return Status();
  }
  // NOTE: the old bytes of late-loaded pages are never cut back (see
  // old_bytes_), so they also bound the journal's life.
  if (journal_.size() >= 2 * index_.keyframe_interval() || old_bytes_.size() > (8u << 20)) {
    ClearJournal();
  }
  journal_.push_back(
      {event_reader_position_, static_cast<std::uint32_t>(undo_.size()),
       static_cast<std::uint32_t>(undo_bytes_.size()), static_cast<std::uint32_t>(writes_.size()),
       static_cast<std::uint32_t>(write_bytes_.size()), (event_.flags & kEventClearsMemory) != 0});
  if (recording_writes_) {
    PatchWrites(true);
  } else {
    ++unrecorded_;  // no page is cached: nothing to patch
  }
  const auto t = static_cast<std::uint32_t>(*thread);
  bool saved_whole = false;
  auto save_whole = [&] {
    if (saved_whole) return;
    saved_whole = true;
    undo_.push_back({t, kNoRegister, true, static_cast<std::uint32_t>(undo_bytes_.size())});
    auto storage = file.raw_storage();
    auto known = file.raw_known();
    undo_bytes_.insert(undo_bytes_.end(), storage.begin(), storage.end());
    auto* k = reinterpret_cast<const std::uint8_t*>(known.data());
    undo_bytes_.insert(undo_bytes_.end(), k, k + known.size_bytes());
  };
  if (event_.flags & kEventClearsRegisters) {
    save_whole();
    file.Clear();
  }
  const ArchDescription& arch = trace_.arch();
  for (const RegisterWrite& w : event_.registers) {
    if (!saved_whole) {
      if (arch.info(w.reg).derived) {
        save_whole();
      } else {
        undo_.push_back(
            {t, w.reg, file.known(w.reg), static_cast<std::uint32_t>(undo_bytes_.size())});
        auto old = file.bytes(w.reg);
        undo_bytes_.insert(undo_bytes_.end(), old.begin(), old.end());
      }
    }
    file.Apply(w);
  }
  ++position_;
  reader_at_ = position_;
  event_at_ = kNoEvent;
  return Status();
}

void ReplayCursor::UndoLast() {
  const JournalEntry j = journal_.back();
  journal_.pop_back();
  for (std::size_t i = undo_.size(); i-- > j.undo_begin;) {
    const UndoRecord& u = undo_[i];
    RegisterFile& file = regs_[u.thread];
    const std::uint8_t* bytes = undo_bytes_.data() + u.bytes;
    if (u.reg == kNoRegister) {
      const std::size_t storage = file.raw_storage().size(), words = file.raw_known().size();
      std::uint64_t known[64];
      std::memcpy(known, bytes + storage, 8 * words);
      file.Restore({bytes, storage}, {known, words});
    } else if (u.known) {
      file.Set(u.reg, {bytes, trace_.arch().info(u.reg).size});
    } else {
      file.SetUnknown(u.reg);
    }
  }
  undo_.resize(j.undo_begin);
  undo_bytes_.resize(j.undo_bytes_begin);
  for (std::size_t i = writes_.size(); i-- > j.write_begin;) {
    const WriteRecord& w = writes_[i];
    CachedPage* page = FindPage(w.address & ~(kPageSize - 1));
    if (page == nullptr) continue;
    if (w.old == kNoOld) {
      page->valid = false;  // cannot happen (LoadPage's contract); stay correct anyway
      continue;
    }
    const std::size_t offset = w.address & (kPageSize - 1);
    std::memcpy(page->bytes.data() + offset, old_bytes_.data() + w.old, w.size);
    std::memcpy(page->bytes.data() + kPageSize + offset, old_bytes_.data() + w.old + w.size,
                w.size);
  }
  writes_.resize(j.write_begin);
  write_bytes_.resize(j.write_bytes_begin);
  unrecorded_ = std::min(unrecorded_, journal_.size());
  if (j.clears_memory) DropPages();
  --position_;
  // NOTE: Seek on a position the reader produced itself; readers only fail
  // on foreign positions, so the status is not worth propagating here.
  Status s = reader_->Seek(j.reader_position);
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
  if (position_ > journal_base_) {
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

Status ReplayCursor::ReadMemory(Address address, std::span<std::uint8_t> out,
                                std::span<std::uint8_t> known, AddressKind kind) const {
  assert(out.size() == known.size());
  if (index_.physical() && kind == AddressKind::kVirtual) return ReadVirtual(address, out, known);
  if (!index_.physical() && kind == AddressKind::kPhysical) {
    return Status::Unsupported(trace_.path() + ": physical read in a trace of virtual addresses");
  }
  ReadCached(address, out, known);
  return Status();
}

// ---- Page cache

ReplayCursor::CachedPage* ReplayCursor::FindPage(Address base) const {
  for (CachedPage& page : pages_) {
    if (page.valid && page.base == base) return &page;
  }
  return nullptr;
}

bool ReplayCursor::RecordJournaledWrites() const {
  // Entries are unrecorded only since the replay that started the journal
  // and until the first page is cached, so writes_ is empty here.
  assert(writes_.empty() && unrecorded_ <= journal_.size());
  const ReaderPosition saved = reader_->Tell();
  bool ok = reader_->Seek(journal_[0].reader_position).ok();
  scratch_writes_.clear();
  scratch_bytes_.clear();
  for (std::size_t i = 0; ok && i < unrecorded_; ++i) {
    Expected<bool> more = reader_->Next(&scratch_event_);
    if (!more.ok() || !*more) {
      ok = false;
      break;
    }
    journal_[i].write_begin = static_cast<std::uint32_t>(scratch_writes_.size());
    journal_[i].write_bytes_begin = static_cast<std::uint32_t>(scratch_bytes_.size());
    for (const MemoryAccess& access : scratch_event_.writes) {
      for (std::size_t done = 0; done < access.data.size();) {
        const Address a = access.address + done;
        const std::size_t n =
            std::min<std::size_t>(access.data.size() - done, kPageSize - (a & (kPageSize - 1)));
        scratch_writes_.push_back({a, static_cast<std::uint32_t>(n),
                                   static_cast<std::uint32_t>(scratch_bytes_.size()), kNoOld});
        scratch_bytes_.insert(scratch_bytes_.end(), access.data.begin() + done,
                              access.data.begin() + done + n);
        done += n;
      }
    }
  }
  // NOTE: Seek on a position the reader produced itself (see UndoLast).
  Status restored = reader_->Seek(saved);
  (void)restored;
  if (!ok) return false;
  for (std::size_t i = unrecorded_; i < journal_.size(); ++i) {
    journal_[i].write_begin = static_cast<std::uint32_t>(scratch_writes_.size());
    journal_[i].write_bytes_begin = static_cast<std::uint32_t>(scratch_bytes_.size());
  }
  writes_.swap(scratch_writes_);
  write_bytes_.swap(scratch_bytes_);
  unrecorded_ = 0;
  recording_writes_ = true;
  return true;
}

ReplayCursor::CachedPage* ReplayCursor::LoadPage(Address base) const {
  if (CachedPage* page = FindPage(base)) {
    page->used = ++page_clock_;
    return page;
  }
  if (unrecorded_ > 0 && !RecordJournaledWrites()) return nullptr;
  recording_writes_ = true;
  CachedPage* slot = nullptr;
  if (pages_.size() < kCachedPages) {
    slot = &pages_.emplace_back();
    slot->bytes.resize(2 * kPageSize);
  } else {
    slot = &pages_.front();
    for (CachedPage& page : pages_) {
      if (!page.valid) {
        slot = &page;
        break;
      }
      if (page.used < slot->used) slot = &page;
    }
  }
  std::span<std::uint8_t> values(slot->bytes.data(), kPageSize);
  std::span<std::uint8_t> known(slot->bytes.data() + kPageSize, kPageSize);
  // Read at the journal's base, then replay the journaled writes to this
  // page, keeping the old bytes each one overwrote: backward steps through
  // the journal can then restore the page without the index. A clear of
  // memory starts a new epoch whose state the index infers from later reads
  // (memory_state.h), so the replay starts after the journal's last clear
  // (undoing that clear drops the cache anyway).
  std::size_t first_entry = 0;
  for (std::size_t e = journal_.size(); e-- > 0;) {
    if (journal_[e].clears_memory) {
      first_entry = e + 1;
      break;
    }
  }
  ReadNativeMemory(index_, image_, journal_base_ + first_entry, base, values, known);
  const std::size_t first_write =
      first_entry < journal_.size() ? journal_[first_entry].write_begin : writes_.size();
  for (std::size_t i = first_write; i < writes_.size(); ++i) {
    WriteRecord& w = writes_[i];
    if ((w.address & ~(kPageSize - 1)) != base) continue;
    const std::size_t offset = w.address & (kPageSize - 1);
    w.old = static_cast<std::uint32_t>(old_bytes_.size());
    old_bytes_.insert(old_bytes_.end(), values.begin() + offset, values.begin() + offset + w.size);
    old_bytes_.insert(old_bytes_.end(), known.begin() + offset, known.begin() + offset + w.size);
    std::memcpy(values.data() + offset, write_bytes_.data() + w.data, w.size);
    std::fill(known.begin() + offset, known.begin() + offset + w.size, 1);
  }
  slot->base = base;
  slot->valid = true;
  slot->used = ++page_clock_;
  return slot;
}

void ReplayCursor::ReadCached(Address address, std::span<std::uint8_t> out,
                              std::span<std::uint8_t> known) const {
  for (std::size_t done = 0; done < out.size();) {
    const Address a = address + done;
    const std::size_t offset = a & (kPageSize - 1);
    const std::size_t n = std::min<std::size_t>(out.size() - done, kPageSize - offset);
    const Address base = a - offset;
    const auto missed_end = missed_.begin() + std::min(missed_count_, missed_.size());
    const CachedPage* page = nullptr;
    if (FindPage(base) != nullptr || std::find(missed_.begin(), missed_end, base) != missed_end) {
      page = LoadPage(base);
    } else {
      missed_[missed_count_++ % missed_.size()] = base;
    }
    if (page == nullptr) {
      ReadNativeMemory(index_, image_, position_, a, out.subspan(done, n), known.subspan(done, n));
    } else {
      std::memcpy(out.data() + done, page->bytes.data() + offset, n);
      std::memcpy(known.data() + done, page->bytes.data() + kPageSize + offset, n);
    }
    done += n;
  }
}

void ReplayCursor::PatchWrites(bool journal) {
  if (event_.flags & kEventClearsMemory) DropPages();
  for (const MemoryAccess& access : event_.writes) {
    for (std::size_t done = 0; done < access.data.size();) {
      const Address a = access.address + done;
      const std::size_t offset = a & (kPageSize - 1);
      const std::size_t n = std::min<std::size_t>(access.data.size() - done, kPageSize - offset);
      const std::uint8_t* data = access.data.data() + done;
      done += n;
      CachedPage* page = FindPage(a - offset);
      if (journal) {
        WriteRecord w{a, static_cast<std::uint32_t>(n),
                      static_cast<std::uint32_t>(write_bytes_.size()), kNoOld};
        write_bytes_.insert(write_bytes_.end(), data, data + n);
        if (page != nullptr) {
          w.old = static_cast<std::uint32_t>(old_bytes_.size());
          const std::uint8_t* bytes = page->bytes.data() + offset;
          old_bytes_.insert(old_bytes_.end(), bytes, bytes + n);
          old_bytes_.insert(old_bytes_.end(), bytes + kPageSize, bytes + kPageSize + n);
        }
        writes_.push_back(w);
      }
      if (page != nullptr) {
        std::memcpy(page->bytes.data() + offset, data, n);
        std::memset(page->bytes.data() + kPageSize + offset, 1, n);
      }
    }
  }
}

void ReplayCursor::DropPages() const {
  for (CachedPage& page : pages_) page.valid = false;
  missed_count_ = 0;
}

Expected<PagingRegisters> ReplayCursor::Paging() const {
  const std::optional<std::size_t> thread = index_.ThreadIndexOf(current_thread());
  if (!thread) return Status::Unsupported(trace_.path() + ": no thread to translate with");
  const PagingRegisters paging = PagingFromState(regs_[*thread], trace_.header());
  if (!paging.registers_known) {
    return Status::Unsupported(trace_.path() + ": paging registers unknown at position " +
                               std::to_string(position_));
  }
  return paging;
}

// Page-table reads at this position (entries are at most 8 bytes).
PhysicalReadFn ReplayCursor::PhysicalReader() const {
  return [this](Address pa, std::span<std::uint8_t> bytes) {
    std::uint8_t k[64];
    if (bytes.size() > sizeof(k)) return false;
    ReadCached(pa, bytes, {k, bytes.size()});
    return std::all_of(k, k + bytes.size(), [](std::uint8_t b) { return b != 0; });
  };
}

Status ReplayCursor::ReadVirtual(Address address, std::span<std::uint8_t> out,
                                 std::span<std::uint8_t> known) const {
  std::fill(out.begin(), out.end(), 0);
  std::fill(known.begin(), known.end(), 0);
  BACKSTEP_ASSIGN_OR_RETURN(const PagingRegisters paging, Paging());
  const PhysicalReadFn read = PhysicalReader();
  for (std::size_t done = 0; done < out.size();) {
    const Address va = address + done;
    Expected<Translation> t = TranslateX86(paging, va, read);
    std::size_t n = std::min<std::size_t>(out.size() - done, kPageSize - (va & (kPageSize - 1)));
    if (t.ok()) {
      if (t->page_size == 0) {
        n = out.size() - done;
      } else {
        n = std::min<std::size_t>(out.size() - done, t->page_size - (va & (t->page_size - 1)));
      }
      ReadCached(t->physical, out.subspan(done, n), known.subspan(done, n));
    }
    done += n;  // unmapped: unknown bytes up to the next 4 KiB boundary
  }
  return Status();
}

Expected<std::vector<NativeRange>> ReplayCursor::TranslateRange(Address address,
                                                                std::uint64_t length) const {
  std::vector<NativeRange> out;
  auto add_pages = [&out](Address native, Address debugger, std::uint64_t n) {
    while (n > 0) {
      const std::uint64_t k = std::min<std::uint64_t>(n, kPageSize - (native & (kPageSize - 1)));
      out.push_back({native, native + k, debugger});
      native += k;
      debugger += k;
      n -= k;
    }
  };
  if (!index_.physical()) {
    add_pages(address, address, length);
    return out;
  }
  BACKSTEP_ASSIGN_OR_RETURN(const PagingRegisters paging, Paging());
  const PhysicalReadFn read = PhysicalReader();
  for (std::uint64_t done = 0; done < length;) {
    const Address va = address + done;
    const std::uint64_t n =
        std::min<std::uint64_t>(length - done, kPageSize - (va & (kPageSize - 1)));
    Expected<Translation> t = TranslateX86(paging, va, read);
    if (t.ok()) add_pages(t->physical, va, n);
    done += n;
  }
  return out;
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
