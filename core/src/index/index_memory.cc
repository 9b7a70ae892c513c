// Access-list queries of TraceIndex. A page's entries in a segment are
// blocks of encoded entries with a directory of BlockRecords (first event,
// line mask); lookups binary-search the pages, then the blocks, and decode
// whole blocks. Line masks let scans skip blocks that touch none of the
// asked lines; write-state queries start from the latest page snapshot, so
// they decode at most snapshot_blocks blocks per segment, take an earlier
// segment's end snapshot without decoding, and stop at a complete snapshot.
#include <algorithm>
#include <cstring>
#include <vector>

#include "index/page_byte_set.h"
#include "index/trace_index.h"

namespace backstep::core {
namespace {

struct Blocks {
  const std::uint8_t* base;
  std::uint64_t count;
  BlockRecord at(std::uint64_t i) const {
    return LoadRecord<BlockRecord>(base + i * sizeof(BlockRecord));
  }
  // Number of blocks whose first event satisfies pred (a prefix).
  template <class Pred>
  std::uint64_t Count(Pred&& pred) const {
    std::uint64_t lo = 0, hi = count;
    while (lo < hi) {
      const std::uint64_t mid = lo + (hi - lo) / 2;
      if (pred(LoadRecord<std::uint64_t>(base + mid * sizeof(BlockRecord)))) {
        lo = mid + 1;
      } else {
        hi = mid;
      }
    }
    return lo;
  }
};

bool Overlaps(const AccessEntry& e, std::uint32_t o1, std::uint32_t o2) {
  return e.offset < o2 && o1 < e.offset + e.length;
}

// Page number of PageRecord i of a list's sorted page array.
std::uint64_t PageAt(const std::uint8_t* base, std::uint64_t i) {
  return LoadRecord<std::uint64_t>(base + i * sizeof(PageRecord));
}

// Index of the first of `count` PageRecords at `base` whose page >= `page`.
std::uint64_t FirstPageAtOrAfter(const std::uint8_t* base, std::uint64_t count,
                                 std::uint64_t page) {
  std::uint64_t lo = 0, hi = count;
  while (lo < hi) {
    const std::uint64_t mid = lo + (hi - lo) / 2;
    if (PageAt(base, mid) < page) {
      lo = mid + 1;
    } else {
      hi = mid;
    }
  }
  return lo;
}

}  // namespace

std::optional<PageRecord> TraceIndex::FindPage(const SegmentRecord& seg, AccessListKind list,
                                               std::uint64_t page) const {
  const std::uint8_t* base = bytes_.data() + seg.lists[list].pages_offset;
  const std::uint64_t lo = FirstPageAtOrAfter(base, seg.lists[list].page_count, page);
  if (lo == seg.lists[list].page_count) return std::nullopt;
  const auto rec = LoadRecord<PageRecord>(base + lo * sizeof(PageRecord));
  if (rec.page != page) return std::nullopt;
  return rec;
}

std::vector<std::uint64_t> TraceIndex::ListedPages(AccessListKind list, std::uint64_t first_page,
                                                   std::uint64_t last_page) const {
  std::vector<std::uint64_t> pages;
  for (std::uint64_t s = 0; s < dir_.segment_count; ++s) {
    const ListRecord rec = segment(s).lists[list];
    const std::uint8_t* base = bytes_.data() + rec.pages_offset;
    for (std::uint64_t i = FirstPageAtOrAfter(base, rec.page_count, first_page);
         i < rec.page_count && PageAt(base, i) <= last_page; ++i) {
      pages.push_back(PageAt(base, i));
    }
  }
  // Segments list overlapping sets of pages: merge them.
  std::sort(pages.begin(), pages.end());
  pages.erase(std::unique(pages.begin(), pages.end()), pages.end());
  return pages;
}

EntryDecoder TraceIndex::BlockDecoder(const BlockRecord& block, AccessListKind list) const {
  // Parse checked that the block's data lies in the file.
  const std::uint8_t* data = bytes_.data() + block.data_offset;
  return EntryDecoder(data, data + block.data_size, block.first_event,
                      list == kReadList && (dir_.flags & kDirReadsWithoutData));
}

Expected<std::optional<AccessHit>> TraceIndex::NextAccess(
    AccessListKind list, Address lo, Address hi, std::uint64_t from,
    const std::atomic<bool>* interrupt) const {
  const std::uint64_t page = lo >> kPageBits;
  const auto o1 = static_cast<std::uint32_t>(lo & (kPageSize - 1));
  const auto o2 = static_cast<std::uint32_t>(o1 + (hi - lo));
  const std::uint64_t mask = LineMask(o1, o2 - o1);
  std::uint64_t scanned = 0;
  for (std::uint64_t s = SegmentIndexOf(from); s < dir_.segment_count; ++s) {
    const SegmentRecord seg = segment(s);
    if (seg.end_event <= from) continue;
    const auto rec = FindPage(seg, list, page);
    if (!rec) continue;
    const Blocks blocks{bytes_.data() + rec->blocks_offset, rec->block_count};
    std::uint64_t b = blocks.Count([&](std::uint64_t first) { return first < from; });
    for (b = b > 0 ? b - 1 : 0; b < blocks.count; ++b) {
      if ((++scanned & 1023) == 0 && interrupt && interrupt->load(std::memory_order_relaxed)) {
        return Status::Interrupted("search interrupted");
      }
      const BlockRecord block = blocks.at(b);
      if (!(block.line_mask & mask)) continue;
      EntryDecoder decoder = BlockDecoder(block, list);
      for (std::uint32_t j = 0; j < block.entry_count; ++j) {
        const AccessEntry e = decoder.Next();
        if (e.event >= from && Overlaps(e, o1, o2)) {
          return std::optional<AccessHit>(Hit(e, page));
        }
      }
    }
  }
  return std::optional<AccessHit>();
}

Expected<std::optional<AccessHit>> TraceIndex::PrevAccess(
    AccessListKind list, Address lo, Address hi, std::uint64_t before,
    const std::atomic<bool>* interrupt) const {
  if (before == 0 || dir_.segment_count == 0) return std::optional<AccessHit>();
  const std::uint64_t page = lo >> kPageBits;
  const auto o1 = static_cast<std::uint32_t>(lo & (kPageSize - 1));
  const auto o2 = static_cast<std::uint32_t>(o1 + (hi - lo));
  const std::uint64_t mask = LineMask(o1, o2 - o1);
  std::uint64_t scanned = 0;
  // Newest segment first: segments split the events in order, so the first
  // segment with a hit holds the latest access and older segments (each a
  // binary search for the page) are only opened when the newer ones miss.
  for (std::uint64_t s = SegmentIndexOf(before - 1) + 1; s-- > 0;) {
    const auto rec = FindPage(segment(s), list, page);
    if (!rec) continue;
    const Blocks blocks{bytes_.data() + rec->blocks_offset, rec->block_count};
    for (std::uint64_t b = blocks.Count([&](std::uint64_t first) { return first < before; });
         b-- > 0;) {
      if ((++scanned & 1023) == 0 && interrupt && interrupt->load(std::memory_order_relaxed)) {
        return Status::Interrupted("search interrupted");
      }
      const BlockRecord block = blocks.at(b);
      if (!(block.line_mask & mask)) continue;
      EntryDecoder decoder = BlockDecoder(block, list);
      std::optional<AccessEntry> best;  // its data is fetched once, at the end
      for (std::uint32_t j = 0; j < block.entry_count; ++j) {
        const AccessEntry e = decoder.Next();
        if (e.event >= before) break;
        if (Overlaps(e, o1, o2)) best = e;
      }
      if (best) return std::optional<AccessHit>(Hit(*best, page));
    }
  }
  return std::optional<AccessHit>();
}

void TraceIndex::ScanAccesses(AccessListKind list, Address lo, Address hi, std::uint64_t from,
                              std::uint64_t to,
                              const std::function<bool(const AccessHit&)>& fn) const {
  const std::uint64_t page = lo >> kPageBits;
  const auto o1 = static_cast<std::uint32_t>(lo & (kPageSize - 1));
  const auto o2 = static_cast<std::uint32_t>(o1 + (hi - lo));
  const std::uint64_t mask = LineMask(o1, o2 - o1);
  for (std::uint64_t s = SegmentIndexOf(from); s < dir_.segment_count; ++s) {
    const SegmentRecord seg = segment(s);
    if (seg.first_event >= to) return;
    if (seg.end_event <= from) continue;
    const auto rec = FindPage(seg, list, page);
    if (!rec) continue;
    const Blocks blocks{bytes_.data() + rec->blocks_offset, rec->block_count};
    std::uint64_t b = blocks.Count([&](std::uint64_t first) { return first < from; });
    for (b = b > 0 ? b - 1 : 0; b < blocks.count; ++b) {
      const BlockRecord block = blocks.at(b);
      if (block.first_event >= to) return;
      if (!(block.line_mask & mask)) continue;
      EntryDecoder decoder = BlockDecoder(block, list);
      for (std::uint32_t j = 0; j < block.entry_count; ++j) {
        const AccessEntry e = decoder.Next();
        if (e.event >= to) return;
        if (e.event < from || !Overlaps(e, o1, o2)) continue;
        if (!fn(Hit(e, page))) return;
      }
    }
  }
}

std::optional<AccessHit> TraceIndex::FindPiece(AccessListKind list, std::uint64_t page,
                                               std::uint64_t event,
                                               std::uint64_t piece_offset) const {
  if (dir_.segment_count == 0) return std::nullopt;
  const auto rec = FindPage(segment(SegmentIndexOf(event)), list, page);
  if (!rec) return std::nullopt;
  const Blocks blocks{bytes_.data() + rec->blocks_offset, rec->block_count};
  std::uint64_t b = blocks.Count([&](std::uint64_t first) { return first < event; });
  for (b = b > 0 ? b - 1 : 0; b < blocks.count; ++b) {
    const BlockRecord block = blocks.at(b);
    if (block.first_event > event) break;
    EntryDecoder decoder = BlockDecoder(block, list);
    for (std::uint32_t j = 0; j < block.entry_count; ++j) {
      const AccessEntry e = decoder.Next();
      if (e.event > event) return std::nullopt;
      if (e.event == event && e.piece_offset == piece_offset) {
        return Hit(e, page);
      }
    }
  }
  return std::nullopt;
}

void TraceIndex::WriteState(Address lo, Address hi, std::uint64_t lower, std::uint64_t p,
                            std::uint8_t* values, std::uint8_t* known) const {
  if (p == 0 || dir_.segment_count == 0) return;
  const std::uint64_t page = lo >> kPageBits;
  const auto o1 = static_cast<std::uint32_t>(lo & (kPageSize - 1));
  const auto o2 = static_cast<std::uint32_t>(o1 + (hi - lo));
  // The asked bytes not decided yet (known[i - o1] == 0), as a bit set:
  // entries and blocks that cannot decide one are passed over with a few
  // word operations, and each decided byte is taken out of it exactly once.
  PageByteSet undecided;
  undecided.AddZeros(o1, known, o2 - o1);
  // Sets bytes `bits` of line w from data, data[i - offset] for byte i.
  auto decide = [&](const std::uint8_t* data, std::uint32_t offset, std::uint32_t w,
                    std::uint64_t bits) {
    PageByteSet::ForEach(w, bits, [&](std::uint32_t i) {
      values[i - o1] = data[i - offset];
      known[i - o1] = 1;
    });
  };
  // The asked part of an entry: bytes [a, z) of the page, data[i - offset]
  // for byte i.
  struct Piece {
    const std::uint8_t* data;  // null: event_entries[event_entry]'s, decoded when needed
    std::uint32_t offset, a, z, event_entry;
    bool decoded;  // data is in the block's EntryDecoder (AccessEntry::decoded)
  };
  // A block's matching pieces, to walk them newest first (blocks of the
  // default 64 entries fit; larger tunings use the vector).
  constexpr std::uint32_t kBlockBuffer = 128;
  Piece small_block[kBlockBuffer];
  std::vector<Piece> big_block;
  bool last_needed = false;
  // Bytes a piece of at most 64 bytes took (lines word and word + 1) whose
  // data is being prefetched (see below).
  struct Claim {
    const std::uint8_t* data;
    std::uint32_t offset, word;
    std::uint64_t bits[2];
  };
  constexpr std::uintptr_t kLineMask = 63;
  constexpr std::uint32_t kClaimBatch = 64;
  Claim claims[kClaimBatch];
  std::uint32_t claimed = 0;
  auto copy_claims = [&] {
    for (std::uint32_t k = 0; k < claimed; ++k) {
      const Claim& c = claims[k];
      decide(c.data, c.offset, c.word, c.bits[0]);
      decide(c.data, c.offset, c.word + 1, c.bits[1]);
    }
    claimed = 0;
  };
  // Event-referenced entries of the current block (their Piece has no data
  // and names one of them) and the bytes of the one being copied.
  std::vector<AccessEntry> event_entries;
  std::vector<std::uint8_t> buffer;
  AccessEntry e;  // the entry being decoded (EntryDecoder::Read)
  for (std::uint64_t s = SegmentIndexOf(p - 1) + 1; !undecided.empty() && s-- > 0;) {
    const SegmentRecord seg = segment(s);
    if (seg.end_event <= lower) break;
    const auto rec = FindPage(seg, kWriteList, page);
    if (!rec) continue;
    const Blocks blocks{bytes_.data() + rec->blocks_offset, rec->block_count};
    const std::uint64_t end = blocks.Count([&](std::uint64_t first) { return first < p; });
    if (end == 0) continue;
    // The latest snapshot before `end` whose block starts after the clear;
    // for a position past the segment, its end snapshot if it has one.
    const std::uint8_t* snaps = bytes_.data() + rec->snapshots_offset;
    std::uint64_t n = 0;
    for (std::uint64_t lo_s = 0, hi_s = rec->snapshot_count; lo_s < hi_s;) {
      const std::uint64_t mid = lo_s + (hi_s - lo_s) / 2;
      if (LoadRecord<SnapshotRecord>(snaps + mid * sizeof(SnapshotRecord)).block_index < end) {
        lo_s = n = mid + 1;
      } else {
        hi_s = mid;
      }
    }
    std::optional<SnapshotRecord> snap;
    if (p >= seg.end_event && n < rec->snapshot_count) {
      // Snapshots with block_index >= end = block_count: only the end one.
      // Valid whatever `lower` is: the segment reaches past it (see above),
      // and the builder reset the state at that clear.
      snap = LoadRecord<SnapshotRecord>(snaps + n * sizeof(SnapshotRecord));
    } else if (n > 0) {
      const auto s_rec = LoadRecord<SnapshotRecord>(snaps + (n - 1) * sizeof(SnapshotRecord));
      if (blocks.at(s_rec.block_index).first_event >= lower) snap = s_rec;
    }
    std::uint64_t start;
    if (snap) {
      start = snap->block_index;
      // A complete snapshot holds every write since the clear: no earlier
      // segment can add anything.
      if (snap->flags & kSnapshotComplete) last_needed = true;
    } else {
      start = blocks.Count([&](std::uint64_t first) { return first < lower; });
      start = start > 0 ? start - 1 : 0;
    }
    // Newest entries first, each byte taken from the first entry (= the last
    // write) that covers it: older writes of bytes already decided are never
    // fetched, and the walk stops once every asked byte is decided.
    // Referenced data lives in the trace, one cache miss per entry: the walk
    // claims bytes first (takes them out of `undecided`, keeping which) and
    // prefetches the claiming entries' data, then copies a batch of claims
    // at a time, so that the misses overlap instead of following one
    // another. Each byte is taken once, by the newest entry covering it, so
    // the copies' order does not matter. Longer pieces (one contiguous run,
    // which the hardware prefetches) and event-referenced entries (decoded
    // from the trace only when they decide a byte) are copied at once.
    auto claim = [&](const Piece& piece) {
      const std::uint32_t a = piece.a, z = piece.z;
      if (!undecided.AnyIn(a, z)) return;
      const std::uint8_t* data = piece.data;
      // XOR-form data lives in the block's decoder, which the batch of
      // claims outlives (and is in the cache already): copied at once.
      if (!data || z - a > 64 || piece.decoded) {
        if (!data) data = EntryData(event_entries[piece.event_entry], buffer);
        undecided.TakeRange(a, z, [&](std::uint32_t w, std::uint64_t bits) {
          decide(data, piece.offset, w, bits);
        });
        return;
      }
      if (claimed == kClaimBatch) copy_claims();
      Claim& c = claims[claimed++];
      c = {data, piece.offset, a / 64, {0, 0}};
      undecided.TakeRange(a, z,
                          [&](std::uint32_t w, std::uint64_t bits) { c.bits[w - c.word] = bits; });
      const auto first = reinterpret_cast<std::uintptr_t>(data + (a - piece.offset)) & ~kLineMask;
      const auto last = reinterpret_cast<std::uintptr_t>(data + (z - piece.offset) - 1);
      for (std::uintptr_t line = first; line <= last; line += kLineMask + 1) {
        __builtin_prefetch(reinterpret_cast<const void*>(line));
      }
    };
    for (std::uint64_t b = end; !undecided.empty() && b-- > start;) {
      const BlockRecord block = blocks.at(b);
      // No entry of the block touches a line with an undecided byte.
      if (!(block.line_mask & undecided.lines())) continue;
      EntryDecoder decoder = BlockDecoder(block, kWriteList);
      if (block.entry_count > kBlockBuffer && block.entry_count > big_block.size()) {
        big_block.resize(block.entry_count);
      }
      Piece* entries = block.entry_count <= kBlockBuffer ? small_block : big_block.data();
      std::uint32_t count = 0;
      event_entries.clear();
      for (std::uint32_t j = 0; j < block.entry_count; ++j) {
        decoder.Read(e);
        if (e.event >= p) break;
        if (e.event < lower) continue;
        const std::uint32_t a = std::max(o1, e.offset), z = std::min(o2, e.offset + e.length);
        // An entry none of whose bytes is undecided now cannot decide one
        // later in this walk: not kept, its data never looked at.
        if (undecided.AnyIn(a, z)) {
          // Data in the index, the trace or kZeros: EntryData leaves
          // `buffer` alone for those.
          const std::uint8_t* data = e.event_ref ? nullptr : EntryData(e, buffer);
          const auto event_entry = static_cast<std::uint32_t>(event_entries.size());
          if (e.event_ref) event_entries.push_back(e);
          entries[count++] = {data, e.offset, a, z, event_entry, e.decoded};
        }
      }
      for (std::uint32_t k = count; !undecided.empty() && k-- > 0;) claim(entries[k]);
    }
    copy_claims();
    if (snap && !undecided.empty()) {
      const std::uint8_t* bits = bytes_.data() + snap->data_offset;
      const std::uint8_t* snap_values = bits + kPageSize / 8;
      undecided.TakeWhere(
          bits, [&](std::uint32_t w, std::uint64_t taken) { decide(snap_values, 0, w, taken); });
    }
    if (last_needed) break;
  }
}

TraceIndex::SnapshotCounts TraceIndex::CountSnapshots(std::uint64_t s) const {
  SnapshotCounts c;
  const ListRecord& list = segment(s).lists[kWriteList];
  for (std::uint64_t i = 0; i < list.page_count; ++i) {
    const auto rec =
        LoadRecord<PageRecord>(bytes_.data() + list.pages_offset + i * sizeof(PageRecord));
    for (std::uint64_t j = 0; j < rec.snapshot_count; ++j) {
      const auto snap = LoadRecord<SnapshotRecord>(bytes_.data() + rec.snapshots_offset +
                                                   j * sizeof(SnapshotRecord));
      ++c.snapshots;
      c.complete += (snap.flags & kSnapshotComplete) != 0;
      c.end += snap.block_index == rec.block_count;
    }
  }
  return c;
}

void TraceIndex::InferredState(Address lo, Address hi, std::uint64_t first, std::uint64_t last,
                               std::uint8_t* values, std::uint8_t* known) const {
  const std::uint64_t page = lo >> kPageBits;
  const auto o1 = static_cast<std::uint32_t>(lo & (kPageSize - 1));
  const auto o2 = static_cast<std::uint32_t>(o1 + (hi - lo));
  const std::uint64_t mask = LineMask(o1, o2 - o1);
  std::vector<std::uint8_t> buffer;
  for (std::uint64_t s = SegmentIndexOf(first); s < dir_.segment_count; ++s) {
    const SegmentRecord seg = segment(s);
    if (seg.first_event > last) return;
    if (seg.end_event <= first) continue;
    const auto rec = FindPage(seg, kInferredList, page);
    if (!rec) continue;
    const Blocks blocks{bytes_.data() + rec->blocks_offset, rec->block_count};
    std::uint64_t b = blocks.Count([&](std::uint64_t f) { return f < first; });
    for (b = b > 0 ? b - 1 : 0; b < blocks.count; ++b) {
      const BlockRecord block = blocks.at(b);
      if (block.first_event > last) return;
      if (!(block.line_mask & mask)) continue;
      EntryDecoder decoder = BlockDecoder(block, kInferredList);
      for (std::uint32_t j = 0; j < block.entry_count; ++j) {
        const AccessEntry e = decoder.Next();
        if (e.event > last) return;
        if (e.event < first || !Overlaps(e, o1, o2)) continue;
        const std::uint8_t* data = EntryData(e, buffer);
        const std::uint32_t a = std::max(o1, e.offset), z = std::min(o2, e.offset + e.length);
        for (std::uint32_t i = a; i < z; ++i) {
          if (!known[i - o1]) {
            values[i - o1] = data[i - e.offset];
            known[i - o1] = 1;
          }
        }
      }
    }
  }
}

}  // namespace backstep::core
