// ReplayCursor: the Cursor of an indexed trace.
//
// Registers: Seek(p) restores keyframe floor(p / K) from the index (every
// thread's RegisterFile), seeks the cursor's own reader to the keyframe's
// reader position and replays the register writes of at most K events.
// Memory is never replayed: ReadMemory() asks the memory index
// (index/memory_state.h). Physical traces translate virtual reads page by
// page through the x86 page walk (paging/x86_paging.h) with the registers of
// current_thread() at this position.
//
// Moving cheaply: forward seeks within reach continue from the current
// position. Once a backward step had to replay from a keyframe, replayed
// events are journaled (undo_journal.h), so further StepBackward() calls and
// short backward seeks undo events instead of replaying; a seek that loads a
// keyframe stops journaling.
//
// Memory pages read at this position are cached (page_cache.h), so the
// debugger's repeated small reads after each step (the stack, page tables)
// cost a copy instead of index lookups. The cache always describes
// position_: a step forward patches it with the event's writes, a step
// backward restores the old bytes the journal kept, a clear of memory or a
// keyframe load empties it. The replay from a keyframe that starts a journal
// does not record memory writes (a jump followed by one step stays as cheap
// as it was); the first page cached in that window decodes the window's
// events once more to record them. A page first read while the journal is
// not empty is read at the journal's base and brought forward through the
// journaled writes, so that every journaled write to a cached page has its
// old bytes.
//
// Mappings (backstep/core/mappings.h): in a trace whose reader describes
// mapping changes (usercorn), every read follows the trace's shared
// MappingTimeline at this position: bytes unmapped there read as unknown
// (whatever the index last saw written), and unknown bytes of an unfilled
// mapping as known zeros. The cursor keeps the MappingState of its position,
// so reads at one position ask the timeline once; a read that touches no
// unmapped range and leaves no byte unknown costs a binary search and a scan
// of its known-mask. The page cache keeps only what the index says.
//
// Files: replay_cursor.cc (steps, registers, threads),
// replay_cursor_seek.cc (jumps: keyframes and register clears),
// replay_cursor_memory.cc (reads through the cache, page walks).
//
// Thread-safety: one thread at a time (Cursor's contract; the cache makes
// const reads mutate). The Trace must outlive the cursor.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <utility>
#include <vector>

#include "backstep/core/cursor.h"
#include "backstep/core/event.h"
#include "backstep/core/mappings.h"
#include "backstep/core/trace.h"
#include "index/memory_state.h"
#include "index/trace_index.h"
#include "paging/x86_paging.h"
#include "replay/page_cache.h"
#include "replay/undo_journal.h"

namespace backstep::core {

// A piece of a debugger address range in the trace's own address space:
// native [lo, hi) (within one 4 KiB page) holds debugger address `debugger`.
struct NativeRange {
  Address lo = 0, hi = 0;
  Address debugger = 0;
};

class ReplayCursor final : public Cursor {
 public:
  ReplayCursor(const Trace& trace, std::unique_ptr<TraceReader> reader);
  // Loads position 0. Call once before use.
  Status Init();

  const Trace& trace() const override { return trace_; }
  Position position() const override { return Position(position_); }
  Status Seek(Position p) override;
  Status StepForward() override;
  Status StepBackward() override;
  ThreadId current_thread() const override;
  std::vector<ThreadId> threads() const override;
  Expected<const RegisterFile*> Registers(ThreadId thread) const override;
  std::optional<Address> Pc(ThreadId thread) const override;
  Status ReadMemory(Address address, std::span<std::uint8_t> out, std::span<std::uint8_t> known,
                    AddressKind kind = AddressKind::kVirtual) const override;
  Expected<const Event*> CurrentEvent() override;

  // The native pieces of debugger range [address, address + length) at this
  // position, one per page, in address order; unmapped pages are left out.
  // Virtual traces: the range itself, split at pages. Physical traces: the
  // page walk with current_thread()'s registers (Unsupported if unknown).
  Expected<std::vector<NativeRange>> TranslateRange(Address address, std::uint64_t length) const;

 private:
  // ---- Jumps (replay_cursor_seek.cc).
  Status LoadKeyframe(std::uint64_t k);
  // The last event in (from, p) that clears the registers, with its reader
  // position, when the trace has one thread and the reader can seek to it
  // (TraceReader::EventPosition); replaying from there is exact.
  std::optional<std::pair<std::uint64_t, ReaderPosition>> ResetPointBetween(std::uint64_t from,
                                                                            std::uint64_t p) const;
  // Puts the cursor just after event `event` (a register clear, read at
  // `at`), with an empty journal.
  Status LoadResetPoint(std::uint64_t event, const ReaderPosition& at);
  Status SeekJournaled(std::uint64_t p);
  // Applies event position_ (decoding it unless cached) and journals it.
  Status ApplyNext();
  void UndoLast();
  // Empties the journal at position_.
  void ClearJournal() { journal_.Clear(position_); }
  // ---- Memory (replay_cursor_memory.cc).
  // The cached page at `base`, loaded if needed; nullptr when the page
  // cannot be cached (the reader failed).
  PageCache::Page* LoadPage(Address base) const;
  // Reads native memory at position_ through the cache.
  void ReadCached(Address address, std::span<std::uint8_t> out,
                  std::span<std::uint8_t> known) const;
  // Applies event_'s writes to the cached pages, journaling them if asked.
  void PatchWrites(bool journal);
  Expected<PagingRegisters> Paging() const;
  PhysicalReadFn PhysicalReader() const;
  Status ReadVirtual(Address address, std::span<std::uint8_t> out,
                     std::span<std::uint8_t> known) const;
  // The mapping rules at position_: unmapped bytes unknown, unknown bytes of
  // unfilled mappings zero.
  void FollowMappings(Address address, std::span<std::uint8_t> out,
                      std::span<std::uint8_t> known) const;
  // Bytes of the refilled mappings at position_ (MappingState::Refill) that
  // no event since the mapping was made wrote read as zero.
  void ZeroStaleBytes(Address address, std::span<std::uint8_t> out,
                      std::span<std::uint8_t> known) const;

  const Trace& trace_;
  const TraceIndex& index_;
  std::unique_ptr<TraceReader> reader_;
  ImageReadFn image_;
  std::uint64_t position_ = 0;
  std::vector<RegisterFile> regs_;  // by thread index
  // The reader decodes event reader_at_ next. Invariant: reader_at_ ==
  // position_, or event_at_ == position_ and reader_at_ == position_ + 1.
  std::uint64_t reader_at_ = 0;
  Event event_;
  std::uint64_t event_at_ = kNoEvent;
  ReaderPosition event_reader_position_;
  // Journaling starts with the first backward step that needs a replay and
  // lasts until a seek loads a keyframe (random seeks do not pay for it).
  bool journaling_ = false;
  std::optional<std::pair<std::uint64_t, std::size_t>> last_thread_;  // (tid, index) cache
  // Event journal_.base() + i is journal entry i. Mutable: a read that
  // caches a page records the journal's writes and brings the page forward.
  mutable UndoJournal journal_;
  // Mutable: the cache makes const reads mutate.
  mutable PageCache pages_;
  // FollowMappings' state: whether the trace's events describe mappings and
  // the mappings at position mapping_state_at_ (null: the timeline could
  // not read the events).
  bool describes_mappings_ = false;
  mutable std::uint64_t mapping_state_at_ = kNoEvent;
  mutable std::shared_ptr<const MappingState> mapping_state_;
};

}  // namespace backstep::core
