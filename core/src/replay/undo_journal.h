// UndoJournal: what undoes the events a ReplayCursor replayed one by one
// since the journal's base (replay_cursor.h), so that backward steps and
// short backward seeks undo events instead of replaying from a keyframe.
//
// Entry i is event base() + i: the reader position of the event, the old
// values of the registers it changed (or of a thread's whole file, for a
// register clear or a derived register) and its memory writes, each cut at
// 4 KiB pages. A write keeps the bytes it overwrote (values, then known
// flags) only when its page was cached when it was journaled or when the
// page was brought forward later (BringPageForward): pages that were never
// cached need no undo. Writes can also go unrecorded (set_recording_writes
// false: a replay that opens a journal does not pay for them); the entries
// of such a run are recorded later, by decoding their events again, before
// the first page is cached (RecordUnrecordedWrites).
//
// The journal is bounded (Full): 2 K entries for keyframe interval K, and
// 8 MiB of old bytes (never cut back until Clear(): old bytes of a page
// brought forward late belong to earlier entries).
//
// Thread-safety: none (one cursor, one thread).
#pragma once

#include <cassert>
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "backstep/core/arch.h"
#include "backstep/core/event.h"
#include "backstep/core/register_file.h"
#include "backstep/core/trace_reader.h"
#include "index/index_format.h"

namespace backstep::core {

class UndoJournal {
 public:
  struct Entry {
    ReaderPosition reader_position;   // of the event
    std::uint32_t undo_begin;         // first register undo record of the event
    std::uint32_t undo_bytes_begin;   // its first byte
    std::uint32_t write_begin;        // first write record of the event
    std::uint32_t write_bytes_begin;  // its first byte
    bool clears_memory;
  };

  std::uint64_t base() const { return base_; }
  std::size_t size() const { return entries_.size(); }
  // Empties the journal; the next entry is event `base`.
  void Clear(std::uint64_t base);
  // Moves the base of an empty journal (a replay without undo).
  void Rebase(std::uint64_t base) {
    assert(entries_.empty());
    base_ = base;
  }
  // Whether the journal reached its bound (then Clear() before the next entry).
  bool Full(std::uint64_t keyframe_interval) const {
    return entries_.size() >= 2 * keyframe_interval || old_bytes_.size() > (8u << 20);
  }

  // ---- Journaling one event: Begin, then its writes (or SkipWrites), then
  // ApplyRegisters.
  void Begin(const ReaderPosition& reader_position, bool clears_memory);
  bool recording_writes() const { return recording_writes_; }
  void set_recording_writes(bool on) { recording_writes_ = on; }
  // The entry being journaled has no write records (recording_writes() is
  // false; no page is cached then).
  void SkipWrites() { ++unrecorded_; }
  // Records a write of `data` at `address` (within one page); `page_bytes`
  // points at the page's values at that address (its known flags are
  // kPageSize further), nullptr when the page is not cached.
  void RecordWrite(Address address, std::span<const std::uint8_t> data,
                   const std::uint8_t* page_bytes);
  // Applies the event's register changes to `file` (thread `thread` of the
  // cursor), saving the old values first.
  void ApplyRegisters(std::uint32_t thread, RegisterFile& file, const Event& event,
                      const ArchDescription& arch);

  // ---- Undoing: pops the last entry, restores the registers in `regs` and,
  // newest first, calls restore(address, size, old) for each of its writes
  // (old: the values then the known flags, nullptr when not kept).
  template <typename RestoreWrite>
  Entry UndoLast(std::vector<RegisterFile>& regs, const ArchDescription& arch,
                 RestoreWrite restore);

  // ---- Pages first read while the journal is not empty.
  // Entries not recorded yet (their writes are unknown).
  std::size_t unrecorded() const { return unrecorded_; }
  // Records the writes of the unrecorded entries by decoding their events
  // again with `reader` (left where it was); false if the reader fails.
  bool RecordUnrecordedWrites(TraceReader& reader);
  // The position whose memory a page brought forward starts from: the base,
  // or just after the journal's last memory clear (a clear starts a new
  // epoch whose state the index infers from later reads; undoing that clear
  // drops the cache anyway).
  std::uint64_t PageReadPosition() const { return base_ + FirstEntryAfterClear(); }
  // Applies the journaled writes since PageReadPosition() to the page at
  // `base` (read there), keeping the bytes each one overwrote.
  void BringPageForward(Address base, std::span<std::uint8_t> values,
                        std::span<std::uint8_t> known);

 private:
  struct UndoRecord {
    std::uint32_t thread;
    RegisterId reg;  // kNoRegister: the whole file
    bool known;
    std::uint32_t bytes;  // offset in undo_bytes_
  };
  struct WriteRecord {
    Address address;
    std::uint32_t size;
    std::uint32_t data;  // the written bytes, in write_bytes_
    // The bytes before the write, values then known flags, in old_bytes_;
    // kNoOld while the page was not cached.
    std::uint32_t old;
  };
  static constexpr std::uint32_t kNoOld = ~std::uint32_t{0};

  std::size_t FirstEntryAfterClear() const;
  void RestoreRegisters(const Entry& entry, std::vector<RegisterFile>& regs,
                        const ArchDescription& arch);

  std::uint64_t base_ = 0;
  std::vector<Entry> entries_;
  std::vector<UndoRecord> undo_;
  std::vector<std::uint8_t> undo_bytes_;
  std::vector<WriteRecord> writes_;
  std::vector<std::uint8_t> write_bytes_;
  std::vector<std::uint8_t> old_bytes_;
  // Entries [0, unrecorded_) have no write records (and then no page is
  // cached); recording_writes_ says whether new entries get them.
  std::size_t unrecorded_ = 0;
  bool recording_writes_ = true;
  // RecordUnrecordedWrites' buffers, kept to reuse their capacity.
  Event scratch_event_;
  std::vector<WriteRecord> scratch_writes_;
  std::vector<std::uint8_t> scratch_bytes_;
};

template <typename RestoreWrite>
UndoJournal::Entry UndoJournal::UndoLast(std::vector<RegisterFile>& regs,
                                         const ArchDescription& arch, RestoreWrite restore) {
  const Entry entry = entries_.back();
  entries_.pop_back();
  RestoreRegisters(entry, regs, arch);
  for (std::size_t i = writes_.size(); i-- > entry.write_begin;) {
    const WriteRecord& w = writes_[i];
    restore(w.address, w.size, w.old == kNoOld ? nullptr : old_bytes_.data() + w.old);
  }
  writes_.resize(entry.write_begin);
  write_bytes_.resize(entry.write_bytes_begin);
  if (unrecorded_ > entries_.size()) unrecorded_ = entries_.size();
  return entry;
}

}  // namespace backstep::core
