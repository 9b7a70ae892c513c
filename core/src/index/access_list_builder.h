// AccessListBuilder: builds one access list (writes, reads or inferred
// values) of one index segment, page by page, in memory.
//
// Entries arrive in event order, already split at page boundaries. Each page
// keeps its encoded entries (index_format.h) in blocks of `block_entries`,
// with a directory of BlockRecords. For the write list, every
// `snapshot_blocks` blocks a page snapshot (write-state of the page within
// the segment since the last clear: mask + values) is taken, so that a value
// query decodes at most snapshot_blocks * block_entries entries. The state
// behind snapshots is only kept for hot pages: it is computed from the
// page's buffered entries when the page takes its first snapshot, and
// carried from one segment to the next while the page stays written: then
// its snapshots hold every write since the last clear (kSnapshotComplete),
// and queries need no earlier segment.
//
// Memory: the encoded entries (1-3 bytes + data per entry), 32 bytes per
// block, 512 bytes per page with 128 entries or more (the repeat forms'
// table), 1.1 KiB per page with short data kept in the index (the XOR
// forms' table), 4.6 KiB per snapshot and 8 KiB of state per hot page, until Flush();
// after it, the 8 KiB states of hot pages, up to set_carry_budget().
//
// Thread-safety: one thread at a time.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <unordered_map>
#include <vector>

#include "index/append_buffer.h"
#include "index/entry_decoder.h"
#include "index/index_format.h"
#include "index/index_sink.h"

namespace backstep::core {

class AccessListBuilder {
 public:
  // `trace_bytes` resolves referenced data (the reader's whole source).
  AccessListBuilder(std::uint32_t block_entries, std::uint32_t snapshot_blocks, bool snapshots,
                    std::span<const std::uint8_t> trace_bytes);

  // One page piece of an access by `event`. `data` is the piece's bytes;
  // `ref_offset` its offset in the trace file when it is to be referenced
  // instead of copied. `piece_offset`/`access_length` locate the piece in the
  // whole access (0 and data.size() for an access inside one page).
  // `event_ref` (not with ref_offset): the entry references the event's
  // write instead of holding the data (kEntryEvent); the builder still keeps
  // the data in memory until Flush(), for the page's snapshots.
  // Inline: an optional passed to an out-of-line call goes on the stack in
  // two stores and is reloaded whole, which stalls (no store forwarding).
  // The page is selected inline (consecutive pieces mostly share it), and a
  // piece referenced whole with a reference length (most pieces of a trace
  // whose data the reader maps) takes AddRefEntry: six arguments, all in
  // registers, and none of the other forms' work.
  [[gnu::always_inline]] void Add(std::uint64_t event, std::uint64_t page, std::uint32_t offset,
                                  std::span<const std::uint8_t> data,
                                  std::optional<std::uint64_t> ref_offset,
                                  std::uint64_t piece_offset, std::uint64_t access_length,
                                  const EventDataRef* event_ref = nullptr) {
    SelectPage(page);
    if (ref_offset && !event_ref && !without_data_ && piece_offset == 0 &&
        access_length == data.size() && IsRefLength(data.size())) {
      AddRefEntry(event, offset, data, *ref_offset);
      return;
    }
    if (!ref_offset && !event_ref && piece_offset == 0 && access_length == data.size() &&
        data.size() <= kMaxInlineCode) {
      AddInlineEntry(event, offset, data);
      return;
    }
    AddOtherEntry(event, offset, data, ref_offset ? *ref_offset : kNoRefOffset, piece_offset,
                  access_length, event_ref);
  }
  // All memory becomes unknown before the writes of `event`.
  void ClearMemory(std::uint64_t event);
  // The next entries belong to a segment starting at `first_event`.
  // `history_complete`: this builder saw every write before first_event (a
  // pass from event 0), so the state of a page first written in this segment
  // (or since a clear in it) holds every write since the last clear.
  void StartSegment(std::uint64_t first_event, bool history_complete);
  // At most this many bytes of page states are carried from one segment to
  // the next (states of pages written in the last segment are kept first).
  void set_carry_budget(std::uint64_t bytes) { carry_budget_ = bytes; }
  // Entries hold neither data nor references (kDirReadsWithoutData: the
  // read list of a trace whose reads carry no values). Before any Add().
  void set_without_data() { without_data_ = true; }

  std::uint64_t memory_bytes() const { return memory_bytes_; }
  bool empty() const { return pages_.empty(); }
  // Writes the pages (entries, blocks, snapshots, page records) and returns
  // their ListRecord; the builder is then empty except for the write-state
  // of the hot pages just written, which carries into the next segment (so
  // that its snapshots hold every write since the last clear). With
  // `end_snapshots`, each hot page also gets a snapshot of its state at the
  // segment's end, so that queries from later segments decode nothing here.
  ListRecord Flush(IndexSink& sink, bool end_snapshots);

 private:
  struct PageState {
    std::uint8_t values[kPageSize];
    std::uint8_t known[kPageSize];
    std::uint64_t epoch;
    bool complete;  // every write since the last clear, not only this segment's
  };
  struct XorTable {
    std::uint16_t tags[kXorTableSize];  // 0: none
    std::uint64_t values[kXorTableSize][2];
  };
  static constexpr int kRecentBits = 6;
  static constexpr std::uint64_t kRecentAfter = 128;
  struct Page {
    AppendBuffer data;
    std::vector<BlockRecord> blocks;  // data_offset relative to `data`
    std::uint64_t last_event = 0;
    std::uint64_t last_ref = 0;  // last referenced trace offset of the current block
    // The current block's XOR bases (short data of 8, 4, 2, 16 bytes: low,
    // high 8 bytes), and its
    // entries' repeat keys (below) in a direct-mapped table: key << 32 |
    // entry index, by hash of the key.
    std::uint64_t bases[4][2] = {};
    // The current block's last short data by offset (index_format.h,
    // XorTableSlot), from the page's first short data on.
    std::unique_ptr<XorTable> xor_table;
    // The previous entry's event delta and head (xor << 16 | u16 head), the
    // offset of the one before, and its inline data (for stride forms).
    std::uint64_t last_delta = 0;
    std::uint32_t last_head = 0, before_offset = 0;
    std::uint32_t last_length = 0;  // 0: no inline data
    std::uint8_t last_data[kMaxInlineCode];
    // Only for pages with kRecentAfter entries in the segment (the others
    // write no repeat form: a few bytes each, and no table to pay for).
    std::unique_ptr<std::array<std::uint64_t, 1 << kRecentBits>> recent;
    std::uint64_t entries = 0;              // in this segment
    std::unique_ptr<PageState> state;       // hot pages only
    std::vector<SnapshotRecord> snapshots;  // data_offset relative to `snapshot_data`
    std::vector<std::uint8_t> snapshot_data;
    std::vector<std::uint8_t> event_data;  // event-referenced pieces' bytes, in order
  };

  // Repeat keys: event delta << 17 | xor << 16 | head, for deltas below
  // kRepeatMaxDelta (so that no key is kNoRepeat). An entry repeats the
  // latest one of the block with its key when the table still has it.
  static constexpr std::uint64_t kRepeatMaxDelta = std::uint64_t(1) << 14;
  static constexpr std::uint32_t kNoRepeat = ~std::uint32_t(0);

  // Add() for page last_page_, with ref = kNoRefOffset for "not referenced".
  // Inlined into its two out-of-line cases: any entry (AddOtherEntry), and
  // short data inline, whole, not referenced (AddInlineEntry: three
  // arguments, and the compiler drops the reference, split and extended
  // forms' work from it).
  static constexpr std::uint64_t kNoRefOffset = ~std::uint64_t(0);
  [[gnu::always_inline]] inline void AddEntry(std::uint64_t event, std::uint32_t offset,
                                              std::span<const std::uint8_t> data, std::uint64_t ref,
                                              std::uint64_t piece_offset,
                                              std::uint64_t access_length,
                                              const EventDataRef* event_ref);
  void AddOtherEntry(std::uint64_t event, std::uint32_t offset, std::span<const std::uint8_t> data,
                     std::uint64_t ref, std::uint64_t piece_offset, std::uint64_t access_length,
                     const EventDataRef* event_ref);
  void AddInlineEntry(std::uint64_t event, std::uint32_t offset,
                      std::span<const std::uint8_t> data);
  // A length of kRefLengths (4, 8, 16, 32), and its entry code (12..15).
  static bool IsRefLength(std::size_t length) {
    return length >= 4 && length <= 32 && (length & (length - 1)) == 0;
  }
  static std::uint32_t RefCode(std::uint32_t length) {
    return kMaxInlineCode + 1 + static_cast<std::uint32_t>(__builtin_ctz(length)) - 2;
  }
  static_assert(kRefLengths[0] == 4 && kRefLengths[1] == 8 && kRefLengths[2] == 16 &&
                kRefLengths[3] == 32);
  // AddEntry's commonest case, for page last_page_: data referenced whole at
  // trace offset `ref`, of a reference length (IsRefLength), in an index
  // with data and not event-referenced. The same entry bytes as AddEntry
  // (code 12..15; no XOR or same-data form applies to it).
  void AddRefEntry(std::uint64_t event, std::uint32_t offset, std::span<const std::uint8_t> data,
                   std::uint64_t ref);
  // last_page_ := the page of that number, created if new. Consecutive
  // accesses usually hit the same page: no lookup then.
  [[gnu::always_inline]] void SelectPage(std::uint64_t number) {
    if (last_page_ && last_page_number_ == number) return;
    LookUpPage(number);
  }
  // Other pages go through a direct-mapped cache before the hash map (its
  // modulo and node walk cost more than the rest of an append).
  void LookUpPage(std::uint64_t number);
  void OpenBlock(Page& page, std::uint64_t event);
  // The page's open block, after opening a new one if it is full (or none).
  [[gnu::always_inline]] inline BlockRecord& OpenBlockIfFull(Page& page, std::uint64_t event);
  // The parts of an entry's encoding that AddEntry and AddRefEntry share:
  // whether the stride form's offset applies; the repeat form's distance
  // back to the block's latest entry with `key` (0: none, or kNoRepeat);
  // the new entry's head and delta as the previous ones for the next entry;
  // the block's counters, the page's last event and its state once the
  // entry's `bytes` are appended.
  // Inlined by force: with two callers GCC made them calls (at 10^6 events,
  // 1,272 M instructions instead of 1,144 M, with Add's caller too).
  [[gnu::always_inline]] inline static bool IsStride(const Page& page, std::uint32_t index,
                                                     std::uint64_t delta, std::uint32_t offset);
  [[gnu::always_inline]] inline std::uint32_t RepeatBack(Page& page, std::uint32_t key,
                                                         std::uint32_t index);
  [[gnu::always_inline]] inline static void NoteHead(Page& page, std::uint32_t head17,
                                                     std::uint64_t delta);
  [[gnu::always_inline]] inline void EndEntry(Page& page, BlockRecord& block, std::uint64_t event,
                                              std::uint32_t offset,
                                              std::span<const std::uint8_t> data,
                                              std::size_t bytes);
  void TakeSnapshot(Page& page);
  void Rebuild(Page& page, PageState& state) const;
  void ApplyToState(PageState& state, std::uint32_t offset, std::span<const std::uint8_t> data);
  void ResetIfCleared(PageState& state) const;
  void WriteSnapshot(Page& page, std::uint64_t block_index, const PageState& state);

  std::uint32_t block_entries_, snapshot_blocks_;
  bool snapshots_;
  bool without_data_ = false;
  std::span<const std::uint8_t> trace_bytes_;
  std::uint64_t epoch_ = 0;       // number of memory clears so far
  std::uint64_t last_clear_ = 0;  // event of the last clear (0 if none)
  std::uint64_t segment_first_ = 0;
  bool history_complete_ = true;
  std::uint64_t carry_budget_ = 0;
  // Pages written in earlier segments of this pass, 512 pages per bitmap
  // (page >> 9 -> bits): a page first written in this segment has no
  // history elsewhere. ~0.13 byte per page in dense regions.
  std::unordered_map<std::uint64_t, std::array<std::uint64_t, 8>> seen_;
  bool Seen(std::uint64_t page) const;
  std::unordered_map<std::uint64_t, Page> pages_;
  // Hot pages' states carried from previous segments, taken back by the
  // page's first entry in this one (at most carry_budget_ bytes).
  std::unordered_map<std::uint64_t, std::unique_ptr<PageState>> carried_;
  struct PageSlot {
    std::uint64_t number = 0;
    Page* page = nullptr;  // pages_[number] (nodes are stable)
  };
  static constexpr int kPageCacheBits = 9;
  std::array<PageSlot, 1 << kPageCacheBits> page_cache_{};
  Page* last_page_ = nullptr;  // pages_[last_page_number_] (nodes are stable)
  std::uint64_t last_page_number_ = 0;
  std::uint64_t memory_bytes_ = 0;
};

}  // namespace backstep::core
