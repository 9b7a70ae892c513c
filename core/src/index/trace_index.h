// TraceIndex: read access to a mapped index file (index-format.md).
//
// The index is mapped, not loaded: every query reads the fixed-size records
// and encoded lists straight from the mapping, so resident memory stays flat
// as traces grow. Opening validates the whole file (sizes, magics, version,
// identity, checksum, directory bounds) before anything is trusted; see
// ValidateIndex().
//
// Queries (all O(log n) plus a bounded decode, costs below):
//   * threads, runs (thread of an event, next event of a thread);
//   * keyframes (reader position + every thread's registers);
//   * memory clears;
//   * pc index: next/previous event whose pc is A, or in [lo, hi];
//   * access lists (writes, reads, inferred values) per page: next/previous
//     entry overlapping a byte range, and the write-state of bytes at a
//     position (index_memory.cc).
//
// Thread-safety: immutable after construction; const methods may be called
// from any number of threads.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "backstep/core/byte_source.h"
#include "backstep/core/expected.h"
#include "backstep/core/open_options.h"
#include "backstep/core/plain_syscalls.h"
#include "backstep/core/register_file.h"
#include "backstep/core/trace_reader.h"
#include "backstep/core/types.h"
#include "index/entry_decoder.h"
#include "index/index_builder.h"
#include "index/index_format.h"

namespace backstep::core {

// "" if `bytes` is a complete, intact index for `identity`; otherwise why it
// is not: "truncated", "stale: index format 9, this backstep writes 10",
// "stale: register layout changed", "stale: trace modified", "stale:
// keyframe interval changed", "corrupt: ...". Cost: one pass over the file (checksum).
// `after_chunk(chunk)` (optional) is called on each piece of the file once
// the checksum has read it (index_store.cc drops the pages of a mapping
// from the resident set, so that opening a large index does not make it
// all resident).
std::string ValidateIndex(
    std::span<const std::uint8_t> bytes, const IndexIdentity& identity,
    const std::function<void(std::span<const std::uint8_t>)>& after_chunk = nullptr);

// One decoded access-list entry and its page.
class PcTable;

struct AccessHit {
  AccessEntry entry;
  std::uint64_t page = 0;
  const std::uint8_t* data = nullptr;  // entry.length bytes (inline, in the trace, or owned)
  // The bytes of an event-referenced entry, decoded again (kEntryEvent).
  std::shared_ptr<const std::vector<std::uint8_t>> owned;
  Address address() const { return (page << kPageBits) + entry.offset; }
};

class TraceIndex {
 public:
  // Takes a validated index (ValidateIndex() returned ""). `owner` keeps
  // `bytes` alive; `trace_bytes` (the trace file) must outlive the index.
  static Expected<std::unique_ptr<TraceIndex>> Open(std::shared_ptr<const void> owner,
                                                    std::span<const std::uint8_t> bytes,
                                                    std::span<const std::uint8_t> trace_bytes);

  // Opens the reader that decodes event-referenced entries (kEntryEvent:
  // long writes of formats that decompress) again. Without one, or where
  // the event does not decode (a crafted index), their bytes read as zero.
  // Call before the index is shared between threads.
  void set_reader_factory(ReaderFactory make_reader);

  std::uint64_t size_bytes() const { return bytes_.size(); }
  // No recorded access is longer than the data the index and the trace
  // hold together; a longer access_length comes from a crafted file.
  std::uint64_t max_access_length() const { return bytes_.size() + trace_bytes_.size(); }
  std::uint64_t event_count() const { return dir_.event_count; }
  std::uint64_t keyframe_interval() const { return interval_; }
  bool physical() const { return dir_.flags & kDirPhysical; }
  bool records_reads() const { return dir_.flags & kDirRecordsReads; }

  // --- threads and runs ---
  std::size_t thread_count() const { return dir_.thread_count; }
  ThreadRecord thread(std::size_t i) const { return Rec<ThreadRecord>(threads_, i); }
  std::optional<std::size_t> ThreadIndexOf(ThreadId tid) const;
  // Thread index of event `event`. REQUIRES: event < event_count().
  std::size_t ThreadIndexAt(std::uint64_t event) const;
  // Smallest event >= `from` executed by thread `thread`, if any. O(log runs).
  std::optional<std::uint64_t> NextEventOfThread(std::size_t thread, std::uint64_t from) const;
  // Largest event < `before` executed by thread `thread`, if any.
  std::optional<std::uint64_t> PrevEventOfThread(std::size_t thread, std::uint64_t before) const;

  // --- keyframes ---
  // Keyframe k holds the state at position k * keyframe_interval().
  std::uint64_t keyframe_count() const { return dir_.keyframe_count; }
  ReaderPosition KeyframeReaderPosition(std::uint64_t k) const;
  // Restores every thread's registers at keyframe k into files[thread index].
  // REQUIRES: files.size() == thread_count(), files built for the trace's arch.
  void RestoreKeyframe(std::uint64_t k, std::vector<RegisterFile>& files) const;

  // --- segments (for tests and reports) ---
  std::uint64_t segment_count() const { return dir_.segment_count; }
  // [first_event, end_event) of segment s. REQUIRES: s < segment_count().
  std::pair<std::uint64_t, std::uint64_t> SegmentRange(std::uint64_t s) const {
    const SegmentRecord seg = segment(s);
    return {seg.first_event, seg.end_event};
  }
  struct SnapshotCounts {
    std::uint64_t snapshots = 0;             // page snapshots of the write list
    std::uint64_t complete = 0;              // ...with kSnapshotComplete
    std::uint64_t end = 0;                   // ...at the end of the segment
    std::uint64_t complete_after_first = 0;  // (filled by callers that sum segments)
  };
  // Page snapshots of segment s's write list. O(pages of the segment).
  SnapshotCounts CountSnapshots(std::uint64_t s) const;

  // --- clears ---
  // Last event < p that clears memory / first event >= p that does.
  std::optional<std::uint64_t> LastMemoryClearBefore(std::uint64_t p) const;
  std::optional<std::uint64_t> NextMemoryClearFrom(std::uint64_t p) const;
  // Last event < p that clears the registers of its thread, with that
  // thread's index. O(log clears).
  std::optional<RegisterClearRecord> LastRegisterClearBefore(std::uint64_t p) const;

  // --- noted events (DescribesNotes; kDirNotes) ---
  // Whether the index lists them (without the list, consumers decode).
  bool lists_notes() const { return dir_.flags & kDirNotes; }
  std::uint64_t note_count() const { return dir_.note_count; }
  struct Note {
    std::uint64_t event = 0;
    std::uint64_t tid = 0;
    std::uint32_t kind = 0;        // EventKind (checked at open)
    std::string_view description;  // in the mapping
  };
  // Noted event i, in event order. REQUIRES: i < note_count().
  Note note(std::uint64_t i) const;
  // The plain system calls (version 9; checked at open).
  PlainSyscalls plain_syscalls() const {
    return PlainSyscalls(dir_.plain_syscall_count, plain_skips_, plain_stream_,
                         dir_.plain_syscall_stream_size);
  }

  // --- pc index (index_pc.cc) ---
  // First event >= from / last event < before whose pc (in the state before
  // it, kInstruction and kFrame events) is `pc`.
  std::optional<std::uint64_t> NextPc(Address pc, std::uint64_t from) const;
  std::optional<std::uint64_t> PrevPc(Address pc, std::uint64_t before) const;
  // Same for any pc in [lo, hi] (inclusive).
  std::optional<std::uint64_t> NextPcInRange(Address lo, Address hi, std::uint64_t from) const;
  // Number of events in [from, to) whose pc is `pc`, without listing them:
  // per segment one binary search and at most two block decodes.
  std::uint64_t CountPc(Address pc, std::uint64_t from, std::uint64_t to) const;

  // --- access lists (index_memory.cc) ---
  // First entry with event >= from / last entry with event < before that
  // overlaps [lo, hi) (one page: REQUIRES lo < hi, same page). Interrupted
  // when `interrupt` is set during a long scan.
  Expected<std::optional<AccessHit>> NextAccess(AccessListKind list, Address lo, Address hi,
                                                std::uint64_t from,
                                                const std::atomic<bool>* interrupt) const;
  Expected<std::optional<AccessHit>> PrevAccess(AccessListKind list, Address lo, Address hi,
                                                std::uint64_t before,
                                                const std::atomic<bool>* interrupt) const;
  // Calls fn for each entry with event in [from, to) overlapping [lo, hi)
  // (one page), in order, until fn returns false. Cost: linear in the
  // entries of the page in that range (blocks are skipped by line mask).
  void ScanAccesses(AccessListKind list, Address lo, Address hi, std::uint64_t from,
                    std::uint64_t to, const std::function<bool(const AccessHit&)>& fn) const;
  // Pages in [first_page, last_page] that some segment lists in `list`,
  // ascending and distinct: the only pages a range query can find anything
  // in. Cost: one binary search per segment plus the pages listed in the
  // range; the result is bounded by the pages the index holds, whatever
  // the range's length.
  std::vector<std::uint64_t> ListedPages(AccessListKind list, std::uint64_t first_page,
                                         std::uint64_t last_page) const;
  // The entry of `event` in page `page` that is piece `piece_offset` of an
  // access (to reassemble accesses split at page boundaries).
  std::optional<AccessHit> FindPiece(AccessListKind list, std::uint64_t page, std::uint64_t event,
                                     std::uint64_t piece_offset) const;
  // Bytes [lo, hi) of one page written by events in [lower, p): sets
  // known[i] = 1 and values[i] for each byte with such a write (the last
  // one); leaves other bytes alone. Decodes at most snapshot_blocks blocks
  // per segment with the page, and none whose line mask misses every line
  // with a byte still undecided.
  void WriteState(Address lo, Address hi, std::uint64_t lower, std::uint64_t p,
                  std::uint8_t* values, std::uint8_t* known) const;
  // Fills unknown bytes of [lo, hi) (one page) from the inferred list with
  // the entries of events in [first, last].
  void InferredState(Address lo, Address hi, std::uint64_t first, std::uint64_t last,
                     std::uint8_t* values, std::uint8_t* known) const;

 private:
  TraceIndex() = default;
  Status Parse();
  // True if `count` records of `size` bytes at `offset` lie before the
  // footer (no multiplication that could wrap). index_validate.cc.
  bool InFile(std::uint64_t offset, std::uint64_t count, std::uint64_t size) const;
  // Parse's checks of what queries follow without checking: runs and the
  // threads' run lists; a segment's pc records, skips, pages, blocks and
  // snapshots (index_validate.cc).
  Status CheckThreadsAndRuns() const;
  Status CheckSegmentData(std::uint64_t s) const;
  Status CheckPcTable(std::uint64_t s) const;
  // Noted events in increasing order, inside the trace, with a known kind
  // and their text inside the note text.
  Status CheckNotes() const;
  // Plain system calls: each block's skip record where its calls start,
  // the calls' events increasing and inside the trace, and the stream
  // exactly as long as its calls.
  Status CheckPlainSyscalls() const;
  template <class T>
  T Rec(const std::uint8_t* base, std::uint64_t i) const {
    return LoadRecord<T>(base + i * sizeof(T));
  }
  std::uint64_t SegmentIndexOf(std::uint64_t event) const;
  SegmentRecord segment(std::uint64_t i) const { return Rec<SegmentRecord>(segments_, i); }
  // Restores the register record at `offset` (following its delta chain).
  void RestoreRecord(std::uint64_t offset, RegisterFile& file) const;
  std::optional<PageRecord> FindPage(const SegmentRecord& seg, AccessListKind list,
                                     std::uint64_t page) const;
  // An entry's bytes: inline, in the trace, or decoded into `buffer`
  // (index_event_data.cc). Hit(): the same, held by the hit.
  const std::uint8_t* EntryData(const AccessEntry& e, std::vector<std::uint8_t>& buffer) const;
  AccessHit Hit(const AccessEntry& e, std::uint64_t page) const;
  // Bytes [piece_offset, + length) of the write an event_ref entry names.
  void EventData(const AccessEntry& e, std::uint8_t* out) const;
  struct EventDataCache;
  // The decoder of a block's entries, bounded by its data.
  EntryDecoder BlockDecoder(const BlockRecord& block, AccessListKind list) const;
  std::optional<std::uint64_t> NextPcInSegment(const SegmentRecord& seg, Address pc,
                                               std::uint64_t from) const;
  std::optional<std::uint64_t> PrevPcInSegment(const SegmentRecord& seg, Address pc,
                                               std::uint64_t before) const;
  // The segment's pc table (pc_table.h).
  PcTable Pcs(const SegmentRecord& seg) const;
  // Skip record i of `rec` (the first posting alone when it has no table).
  SkipRecord SkipAt(const PcRecord& rec, std::uint64_t i) const;
  std::optional<std::uint64_t> PostingAtOrAfter(const PcRecord& rec, std::uint64_t from) const;
  // The same for a record of `table` that may be a follower (index_pc.cc).
  std::optional<std::uint64_t> PostingAtOrAfter(const PcTable& table, const PcRecord& rec,
                                                std::uint64_t from) const;
  std::optional<std::uint64_t> PostingBefore(const PcRecord& rec, std::uint64_t before) const;
  // Number of postings of `rec` below `before`.
  std::uint64_t PostingRank(const PcRecord& rec, std::uint64_t before) const;

  std::shared_ptr<const void> owner_;
  std::span<const std::uint8_t> bytes_, trace_bytes_;
  IndexDirectory dir_{};
  std::uint64_t interval_ = 0;
  const std::uint8_t *threads_ = nullptr, *runs_ = nullptr, *keyframes_ = nullptr;
  const std::uint8_t *memory_clears_ = nullptr, *register_clears_ = nullptr;
  const std::uint8_t* segments_ = nullptr;
  const std::uint8_t *notes_ = nullptr, *note_text_ = nullptr;
  const std::uint8_t *plain_skips_ = nullptr, *plain_stream_ = nullptr;
  std::vector<std::pair<std::uint64_t, std::size_t>> thread_ids_;  // sorted (tid, index)
  std::shared_ptr<EventDataCache> event_data_;                     // set_reader_factory()
};

}  // namespace backstep::core
