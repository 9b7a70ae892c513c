#include "replay/undo_journal.h"

#include <algorithm>
#include <cassert>
#include <cstring>

namespace backstep::core {

void UndoJournal::Clear(std::uint64_t base) {
  base_ = base;
  entries_.clear();
  undo_.clear();
  undo_bytes_.clear();
  writes_.clear();
  write_bytes_.clear();
  old_bytes_.clear();
  unrecorded_ = 0;
}

void UndoJournal::Begin(const ReaderPosition& reader_position, bool clears_memory) {
  entries_.push_back({reader_position, static_cast<std::uint32_t>(undo_.size()),
                      static_cast<std::uint32_t>(undo_bytes_.size()),
                      static_cast<std::uint32_t>(writes_.size()),
                      static_cast<std::uint32_t>(write_bytes_.size()), clears_memory});
}

void UndoJournal::RecordWrite(Address address, std::span<const std::uint8_t> data,
                              const std::uint8_t* page_bytes) {
  WriteRecord w{address, static_cast<std::uint32_t>(data.size()),
                static_cast<std::uint32_t>(write_bytes_.size()), kNoOld};
  write_bytes_.insert(write_bytes_.end(), data.begin(), data.end());
  if (page_bytes != nullptr) {
    w.old = static_cast<std::uint32_t>(old_bytes_.size());
    old_bytes_.insert(old_bytes_.end(), page_bytes, page_bytes + data.size());
    old_bytes_.insert(old_bytes_.end(), page_bytes + kPageSize,
                      page_bytes + kPageSize + data.size());
  }
  writes_.push_back(w);
}

void UndoJournal::ApplyRegisters(std::uint32_t thread, RegisterFile& file, const Event& event,
                                 const ArchDescription& arch) {
  bool saved_whole = false;
  auto save_whole = [&] {
    if (saved_whole) return;
    saved_whole = true;
    undo_.push_back({thread, kNoRegister, true, static_cast<std::uint32_t>(undo_bytes_.size())});
    auto storage = file.raw_storage();
    auto known = file.raw_known();
    undo_bytes_.insert(undo_bytes_.end(), storage.begin(), storage.end());
    auto* k = reinterpret_cast<const std::uint8_t*>(known.data());
    undo_bytes_.insert(undo_bytes_.end(), k, k + known.size_bytes());
  };
  if (event.flags & kEventClearsRegisters) {
    save_whole();
    file.Clear();
  }
  for (const RegisterWrite& w : event.registers) {
    if (!saved_whole) {
      if (arch.info(w.reg).derived) {
        save_whole();
      } else {
        undo_.push_back(
            {thread, w.reg, file.known(w.reg), static_cast<std::uint32_t>(undo_bytes_.size())});
        auto old = file.bytes(w.reg);
        undo_bytes_.insert(undo_bytes_.end(), old.begin(), old.end());
      }
    }
    file.Apply(w);
  }
}

void UndoJournal::RestoreRegisters(const Entry& entry, std::vector<RegisterFile>& regs,
                                   const ArchDescription& arch) {
  for (std::size_t i = undo_.size(); i-- > entry.undo_begin;) {
    const UndoRecord& u = undo_[i];
    RegisterFile& file = regs[u.thread];
    const std::uint8_t* bytes = undo_bytes_.data() + u.bytes;
    if (u.reg == kNoRegister) {
      const std::size_t storage = file.raw_storage().size(), words = file.raw_known().size();
      std::uint64_t known[64];
      std::memcpy(known, bytes + storage, 8 * words);
      file.Restore({bytes, storage}, {known, words});
    } else if (u.known) {
      file.Set(u.reg, {bytes, arch.info(u.reg).size});
    } else {
      file.SetUnknown(u.reg);
    }
  }
  undo_.resize(entry.undo_begin);
  undo_bytes_.resize(entry.undo_bytes_begin);
}

bool UndoJournal::RecordUnrecordedWrites(TraceReader& reader) {
  // Entries are unrecorded only since the replay that started the journal
  // and until the first page is cached, so writes_ is empty here.
  assert(writes_.empty() && unrecorded_ <= entries_.size());
  const ReaderPosition saved = reader.Tell();
  bool ok = reader.Seek(entries_[0].reader_position).ok();
  scratch_writes_.clear();
  scratch_bytes_.clear();
  for (std::size_t i = 0; ok && i < unrecorded_; ++i) {
    Expected<bool> more = reader.Next(&scratch_event_);
    if (!more.ok() || !*more) {
      ok = false;
      break;
    }
    entries_[i].write_begin = static_cast<std::uint32_t>(scratch_writes_.size());
    entries_[i].write_bytes_begin = static_cast<std::uint32_t>(scratch_bytes_.size());
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
  // NOTE: Seek on a position the reader produced itself; readers only fail
  // on foreign positions, so the status is not worth propagating here.
  Status restored = reader.Seek(saved);
  (void)restored;
  if (!ok) return false;
  for (std::size_t i = unrecorded_; i < entries_.size(); ++i) {
    entries_[i].write_begin = static_cast<std::uint32_t>(scratch_writes_.size());
    entries_[i].write_bytes_begin = static_cast<std::uint32_t>(scratch_bytes_.size());
  }
  writes_.swap(scratch_writes_);
  write_bytes_.swap(scratch_bytes_);
  unrecorded_ = 0;
  recording_writes_ = true;
  return true;
}

std::size_t UndoJournal::FirstEntryAfterClear() const {
  for (std::size_t e = entries_.size(); e-- > 0;) {
    if (entries_[e].clears_memory) return e + 1;
  }
  return 0;
}

void UndoJournal::BringPageForward(Address base, std::span<std::uint8_t> values,
                                   std::span<std::uint8_t> known) {
  const std::size_t first_entry = FirstEntryAfterClear();
  const std::size_t first_write =
      first_entry < entries_.size() ? entries_[first_entry].write_begin : writes_.size();
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
}

}  // namespace backstep::core
