// Byte layout of a backstep index file (`<trace>.bsidx`): constants, the
// fixed-size records, and the varint / entry codecs shared by the builder and
// the reader. docs/formats/index-format.md explains the layout and its reasons.
//
// Every integer is little-endian. Fixed-size records are 8-byte aligned in
// the file and read with memcpy (no alignment assumptions, no UB).
//
// Thread-safety: constants and pure functions.
#pragma once

#include <cstdint>
#include <cstring>
#include <span>
#include <type_traits>

namespace backstep::core {

inline constexpr char kIndexMagic[8] = {'B', 'S', 'I', 'N', 'D', 'E', 'X', '\n'};
inline constexpr char kFooterMagic[8] = {'B', 'S', 'I', 'D', 'X', 'E', 'N', 'D'};
// Bump on any change of layout or meaning; a different version is rebuilt.
inline constexpr std::uint32_t kIndexVersion = 10;

inline constexpr std::uint64_t kPageBits = 12;
inline constexpr std::uint64_t kPageSize = 1u << kPageBits;
inline constexpr std::uint64_t kNoEvent = ~std::uint64_t(0);
inline constexpr std::uint32_t kPostingsPerBlock = 128;
// Defaults of the access lists (the file records the values used).
inline constexpr std::uint32_t kDefaultBlockEntries = 64;
inline constexpr std::uint32_t kDefaultSnapshotBlocks = 128;
// Accessed bytes at least this long are referenced by trace-file offset
// (a delta of 1-3 bytes) when the reader's span lies inside the trace file.
inline constexpr std::uint32_t kMinReferencedLength = 4;
// Written pieces at least this long that are not in the trace file (formats
// that decompress: usercorn) reference the event that wrote them instead of
// being copied: the reader decodes that event again when they are read.
inline constexpr std::uint32_t kMinEventReferencedLength = 64;

template <class T>
T LoadRecord(const std::uint8_t* p) {
  static_assert(std::is_trivially_copyable_v<T>);
  T v;
  std::memcpy(&v, p, sizeof(T));
  return v;
}

// File header, at offset 0 (kHeaderSize bytes).
struct IndexHeader {
  char magic[8];
  std::uint32_t version;
  std::uint32_t header_size;
  std::uint64_t trace_size;
  std::int64_t trace_mtime_ns;
  std::uint64_t trace_hash;  // first and last 64 KiB of the trace
  std::uint64_t keyframe_interval;
  char format[32];               // registry name, zero-padded
  std::uint64_t arch_signature;  // ArchSignature(): register layout of the records
  std::uint64_t reserved[3];
};
inline constexpr std::uint64_t kHeaderSize = sizeof(IndexHeader);
static_assert(kHeaderSize == 112);

// File footer, the last kFooterSize bytes. checksum covers [0, footer).
struct IndexFooter {
  std::uint64_t directory_offset;
  std::uint64_t directory_size;
  std::uint64_t file_size;
  std::uint64_t checksum;
  char magic[8];
};
inline constexpr std::uint64_t kFooterSize = sizeof(IndexFooter);
static_assert(kFooterSize == 40);

// Start of the directory; arrays follow in this order.
struct IndexDirectory {
  std::uint64_t event_count;
  std::uint64_t thread_count;
  std::uint64_t run_count;
  std::uint64_t keyframe_count;
  std::uint64_t memory_clear_count;
  std::uint64_t register_clear_count;
  std::uint64_t segment_count;
  std::uint64_t register_storage_size;  // RegisterFile raw_storage() bytes
  std::uint64_t register_known_words;   // RegisterFile raw_known() words
  std::uint64_t flags;                  // kDirPhysical, kDirRecordsReads
  std::uint32_t block_entries;          // access-list entries per block
  std::uint32_t snapshot_blocks;        // blocks between page snapshots
  // The noted events (version 7, kDirNotes): note_count x NoteRecord after
  // the segment records, then note_text_size bytes of their descriptions,
  // zero-padded to 8.
  std::uint64_t note_count;
  std::uint64_t note_text_size;
  // The plain system calls (version 9, PlainSyscallNumber): after the note
  // text, ceil(count / kPlainSyscallsPerBlock) x SyscallSkipRecord, then
  // plain_syscall_stream_size bytes of calls, zero-padded to 8.
  std::uint64_t plain_syscall_count;
  std::uint64_t plain_syscall_stream_size;
  std::uint64_t reserved;
};
inline constexpr std::uint64_t kDirPhysical = 1, kDirRecordsReads = 2;
// The trace's reads carry no values (TraceHeader::read_values false): the
// read list's entries hold no data bytes (a read's value is the memory at
// its position, which queries compute) and decode as zeros.
inline constexpr std::uint64_t kDirReadsWithoutData = 4;
// The directory lists the noted events (every builder sets it since
// version 7): events whose description carries event notes or mapping
// changes (DescribesNotes), so that the mapping timeline and the gdb stub
// read them here instead of decoding the trace. Without it they decode.
inline constexpr std::uint64_t kDirNotes = 8;

struct ThreadRecord {
  std::uint64_t tid;
  std::uint64_t first_event;     // kNoEvent: executes no event
  std::uint64_t initial_record;  // register record at position 0
  std::uint64_t flags;           // 1: has initial registers
  std::uint64_t runs_offset;     // run_count x u64: indices of the thread's runs
  std::uint64_t run_count;
};
inline constexpr std::uint64_t Align8(std::uint64_t n) { return (n + 7) & ~std::uint64_t(7); }
// A register record starts with this header.
//   kind 0 (full): the storage's non-zero 8-byte words and the known words
//     (full_register_record.h); count = the non-zero words, prev = 0.
//   kind 1 (delta from record `prev` of the same thread): count x u16
//     register ids, count x u8 known flags, then the values of the known
//     ones (info(id).size bytes each), zero padding to 8.
// A delta chain has at most kMaxDeltaChain deltas before a full record.
struct RegisterRecordHeader {
  std::uint32_t kind;
  std::uint32_t count;
  std::uint64_t prev;
};
inline constexpr std::uint32_t kFullRecord = 0, kDeltaRecord = 1;
inline constexpr std::uint32_t kMaxDeltaChain = 15;
// A directory naming more register storage is corrupt (x86-64: 3314 bytes).
inline constexpr std::uint64_t kMaxRegisterStorageSize = 1 << 16;
struct RunRecord {  // events [first_event, next run's first_event) run on thread
  std::uint64_t first_event;
  std::uint64_t thread_index;
};
struct KeyframeRecord {  // state at position k * keyframe_interval
  std::uint64_t reader_offset;
  std::uint64_t reader_aux;
  std::uint64_t refs_offset;  // ref_count x RefRecord
  std::uint64_t ref_count;
};
struct RefRecord {
  std::uint64_t thread_index;
  std::uint64_t record_offset;  // register record: storage, then known words
};
// A noted event (kDirNotes), in event order: its description is bytes
// [text_offset, text_offset + text_size) of the note text.
struct NoteRecord {
  std::uint64_t event;
  std::uint64_t tid;   // ThreadId::value of the event's thread
  std::uint32_t kind;  // EventKind
  std::uint32_t text_size;
  std::uint64_t text_offset;  // from the start of the note text
};
// A block of kPlainSyscallsPerBlock plain system calls: its first call's
// event and thread, and where its calls start in the stream. Each call is
// varint(event delta << 1 | thread changes), varint(number), then, when the
// thread changes, varint(tid); the delta is from the previous call of the
// block (0 for the first, which is the record's event), the thread from the
// previous call's (the record's for the first).
struct SyscallSkipRecord {
  std::uint64_t first_event;
  std::uint64_t tid;
  std::uint64_t offset;  // from the start of the stream
};
struct RegisterClearRecord {
  std::uint64_t event;
  std::uint64_t thread_index;
};
// The three access lists of a segment.
enum AccessListKind : int {
  kWriteList = 0,
  kReadList = 1,
  kInferredList = 2,
  kAccessListCount = 3
};
struct ListRecord {
  std::uint64_t pages_offset;  // page_count x PageRecord, sorted by page
  std::uint64_t page_count;
};
struct SegmentRecord {  // everything about events [first_event, end_event)
  std::uint64_t first_event;
  std::uint64_t end_event;
  std::uint64_t pcs_offset;  // ceil(pc_count / kPcsPerGroup) x PcGroupRecord
  std::uint64_t pc_count;
  ListRecord lists[kAccessListCount];
};
// The pc table (version 5): the segment's pcs sorted, in groups of
// kPcsPerGroup, each a PcGroupRecord then its entries (DecodePcEntry()).
inline constexpr std::uint64_t kPcsPerGroup = 8;
struct PcGroupRecord {
  std::uint64_t first_pc;
  std::uint64_t entries_offset;  // the group's entries, one after the other
};
// A pc's record as DecodePcEntry() returns it (not stored as such since
// version 5; offsets are file offsets).
struct PcRecord {
  std::uint64_t pc;
  std::uint64_t count;
  // count > kPostingsPerBlock: offset of ceil(count / kPostingsPerBlock) x
  // SkipRecord. Otherwise the first posting: a pc executed at most one
  // block of times (most pcs of a program) has no skip table.
  std::uint64_t skips_offset;
  std::uint64_t data_offset;  // the deltas (PostingDeltas)
};
// A follower (version 5): a pc whose postings are those of another pc of the
// segment (its leader) plus `shift` events, as the instructions of a basic
// block after its first are. Its record keeps pc and count; skips_offset is
// the leader's record index in the segment's table and data_offset
// kFollowerTag | shift. The leader is never itself a follower.
inline constexpr std::uint64_t kFollowerTag = std::uint64_t(1) << 63;
inline bool IsFollower(const PcRecord& rec) { return (rec.data_offset & kFollowerTag) != 0; }
inline std::uint64_t FollowerShift(const PcRecord& rec) { return rec.data_offset & ~kFollowerTag; }
inline bool HasSkipTable(const PcRecord& rec) {
  return !IsFollower(rec) && rec.count > kPostingsPerBlock;
}
struct SkipRecord {
  std::uint64_t first_event;  // first posting of the block
  std::uint64_t data_rel;     // deltas of the block's other postings, from data_offset
};
inline std::uint64_t GetVarint(const std::uint8_t*& in, const std::uint8_t* end);
// The deltas of a block of postings (version 6): varint(delta), or, after a
// delta of the same block, 0 then varint(m): m more of that delta (a loop's
// leader repeats with its period; a delta is never 0). Reads them one at a
// time; never reads at or past `end` (a damaged file yields zeros there).
struct PostingDeltas {
  const std::uint8_t* in;
  const std::uint8_t* end;
  std::uint64_t delta = 0;
  std::uint64_t left = 0;  // repeats of `delta` still to hand out
  std::uint64_t Next() {
    if (left > 0) {
      --left;
      return delta;
    }
    const std::uint64_t v = GetVarint(in, end);
    if (v != 0) return delta = v;
    const std::uint64_t m = GetVarint(in, end);
    left = m > 0 ? m - 1 : 0;
    return delta;
  }
};
// A pc entry: varint(pc - the previous pc of the group; 0 for the first),
// varint(count << 1 | follower), then
//   a follower: varint(shift), varint(zigzag(entry index - shift - leader
//     index)) (0 when the pcs between leader and follower are the basic
//     block's, each a follower of the one before);
//   else: count <= kPostingsPerBlock: varint(first posting);
//     varint(size of the postings' deltas), the skip table
//     (ceil(count / kPostingsPerBlock) x SkipRecord, unaligned) when count >
//     kPostingsPerBlock, the deltas.
// Decodes the entry at `in` (in [file, end)), number `index` of the
// segment's table, into `out` with file offsets; `in` moves past it. Never
// reads at or past `end`; false when the entry does not fit before `end`
// (only in a damaged file).
inline bool DecodePcEntry(const std::uint8_t* file, const std::uint8_t*& in,
                          const std::uint8_t* end, std::uint64_t prev_pc, std::uint64_t index,
                          PcRecord* out);
struct PageRecord {
  std::uint64_t page;  // address >> kPageBits
  std::uint64_t blocks_offset;
  std::uint32_t block_count;
  std::uint32_t snapshot_count;
  std::uint64_t snapshots_offset;  // snapshot_count x SnapshotRecord
};
struct BlockRecord {
  std::uint64_t first_event;
  std::uint64_t line_mask;  // bit i: an entry touches bytes [64i, 64i+64)
  std::uint64_t data_offset;
  std::uint32_t entry_count;
  std::uint32_t data_size;
};
// Page write-state before block `block_index`: kPageSize/8 mask bytes then
// kPageSize value bytes, of the writes in this segment since the last clear
// or, with kSnapshotComplete, of every write since the last clear (earlier
// segments included: a query that starts from it needs no earlier segment).
// block_index == the page's block_count: the state after the segment's last
// entry (an end snapshot, for queries from later segments).
struct SnapshotRecord {
  std::uint64_t block_index;
  std::uint64_t data_offset;
  std::uint64_t flags;
};
inline constexpr std::uint64_t kSnapshotComplete = 1;
inline constexpr std::uint64_t kSnapshotSize = kPageSize + kPageSize / 8;

static_assert(sizeof(IndexDirectory) == 128 && sizeof(SegmentRecord) == 80 &&
              sizeof(PcRecord) == 32 && sizeof(PcGroupRecord) == 16 && sizeof(PageRecord) == 32 &&
              sizeof(BlockRecord) == 32 && sizeof(NoteRecord) == 32 &&
              sizeof(SyscallSkipRecord) == 24);

// --- varints (LEB128) ---
inline void PutVarint(std::uint64_t v, std::uint8_t*& out) {
  while (v >= 0x80) {
    *out++ = static_cast<std::uint8_t>(v | 0x80);
    v >>= 7;
  }
  *out++ = static_cast<std::uint8_t>(v);
}
// Reads one varint from [in, end). Never reads at or past `end`: a varint
// cut there (only in a damaged file) yields the bits read so far and leaves
// `in` at `end`.
inline std::uint64_t GetVarint(const std::uint8_t*& in, const std::uint8_t* end) {
  // One byte (most event deltas and offset deltas): no loop.
  if (in < end && *in < 0x80) return *in++;
  std::uint64_t v = 0;
  for (int shift = 0; in < end; shift += 7) {
    const std::uint8_t b = *in++;
    v |= std::uint64_t(b & 0x7f) << shift;
    if (!(b & 0x80) || shift >= 63) return v;
  }
  return v;
}

// --- access-list entries ---
// An entry (version 6) starts with varint(v):
//   v & 1 == 0 (full form): event delta = v >> 2 (from the previous entry;
//     the block's first entry is relative to BlockRecord::first_event),
//     xor = (v >> 1) & 1, then u16 head = offset in page (bits 0..11) | code
//     (bits 12..15);
//   v & 1 == 1 (repeat form): the event delta, xor flag and head of the
//     block's entry (v >> 1) + 1 entries back (at most kRepeatWindow), which
//     the builder uses when an entry has exactly those of a recent one (a
//     loop's accesses to a page repeat with its period); v >> 1 ==
//     kStrideForm (stride form): those of the previous entry, but the
//     offset advanced by as much as from the entry before it to the previous
//     one (modulo the page; a loop over an array), from the block's third
//     entry on; v >> 1 == kStrideForm + 1: the same, and no data follows:
//     the data is the previous entry's, which had data of this length inline
//     (code 1..11 or xor). Other odd v are invalid.
// Then, with xor == 0, by code:
//   code 1..11: `code` data bytes;
//   code 12..15: data of 4, 8, 16, 32 bytes referenced in the trace file:
//     zigzag varint(trace offset - previous referenced offset of the block);
//   code 0 (extended): varint(length << 3 | kEntryRef | kEntrySplit |
//     kEntryEvent), for kEntrySplit varint(piece offset in the access) and
//     varint(access length), then the data, or (kEntryRef) the zigzag
//     offset delta, or (kEntryEvent) varint(index of the access in the
//     event's writes), varint(ReaderPosition::offset), varint(ReaderPosition
//     ::aux) of the event: the piece is bytes [piece offset, + length) of
//     that write, decoded again from the trace (EventDataRef).
// With xor == 1 (only among a block's first kXorEntries entries, never in a
// list without data), the data of length L is the XOR of its base (below)
// and k stored bytes (the low bytes; the others are zero): code 0..7: L = 8,
// k = code; 8..11: L = 4, k = code - 8; 12, 13: L = 2, k = code - 12; 14
// (version 8): L = 16, u8 k (< 16) follows the head, then the k bytes; 15:
// invalid. The base (version 8) is the block's previous short data of
// length L at the entry's offset if the XOR table (XorTableSlot) has it,
// else the block's previous short data of length L (zero at the block's
// start). "Short data of length L" is the data of an entry with xor == 1
// and that L, or with xor == 0 and code L (2, 4 or 8), or (L = 16) the
// inline data of an extended entry of 16 bytes that is not split. Pointers
// that share their high bytes and small integers so cost 0-3 bytes instead
// of 8; a vector store that changes a few bytes of a slot costs those.
// EntryDecoder (entry_decoder.h) reads entries; AccessListBuilder writes them.
inline constexpr std::uint64_t kEntryRef = 1, kEntrySplit = 2, kEntryEvent = 4;
inline constexpr std::uint64_t kMaxEntryBytes = 2 + 7 * 10;  // without data
inline constexpr std::uint32_t kMaxInlineCode = 11;
inline constexpr std::uint32_t kRefLengths[4] = {4, 8, 16, 32};
// Repeat form: at most this many entries back. XOR form: only the block's
// first kXorEntries entries (the decoder keeps their data).
inline constexpr std::uint32_t kRepeatWindow = 48;
// Stride forms: v >> 1 == kStrideForm or kStrideForm + 1 (see above).
inline constexpr std::uint32_t kStrideForm = kRepeatWindow;
// The decoder's ring of the last entries' deltas and heads.
inline constexpr std::uint32_t kRepeatRing = 64;
inline constexpr std::uint32_t kXorEntries = 64;
// XOR form: L and k of code c (see above), and the code of (L, k).
// Version 8: k < L always (codes with k == L were never written), which
// frees code 14 for 16 bytes, whose k is the byte after the head; code 15
// is invalid.
inline constexpr std::uint32_t kXor16Code = 14;
inline constexpr std::uint32_t XorLength(std::uint32_t c) {
  return c <= 7 ? 8 : c <= 11 ? 4 : c <= 13 ? 2 : 16;
}
inline constexpr std::uint32_t XorStored(std::uint32_t c) {
  return c <= 7 ? c : c <= 11 ? c - 8 : c - 12;  // not for kXor16Code
}
inline constexpr std::uint32_t XorCode(std::uint32_t length, std::uint32_t k) {
  return length == 16 ? kXor16Code : length == 8 ? k : length == 4 ? 8 + k : 12 + k;
}
// Index of the XOR base of data of length 2, 4, 8, 16 (others: none).
inline constexpr int XorSlot(std::uint32_t length) {
  return length == 8 ? 0 : length == 4 ? 1 : length == 2 ? 2 : length == 16 ? 3 : -1;
}
// Version 8: the XOR base of short data of length L at offset o is the
// block's previous short data of length L *at offset o* when the table below
// still holds it, else the block's previous short data of length L. The
// table (builder and decoder alike) has kXorTableSize slots, one per
// XorTableSlot(o), each holding the tag (XorTableTag(o, XorSlot(L))) and
// data of the last short data whose offset maps to it; it is empty at the
// block's start and every short data entry (any form) updates it.
inline constexpr std::uint32_t kXorTableSize = 64;
inline constexpr std::uint32_t XorTableSlot(std::uint32_t offset) {
  return (offset >> 3) & (kXorTableSize - 1);
}
inline constexpr std::uint16_t XorTableTag(std::uint32_t offset, int slot) {
  return static_cast<std::uint16_t>(0x8000u | static_cast<std::uint32_t>(slot) << 12 | offset);
}

inline std::uint64_t ZigZag(std::int64_t v) {
  return (static_cast<std::uint64_t>(v) << 1) ^ static_cast<std::uint64_t>(v >> 63);
}
inline std::int64_t UnZigZag(std::uint64_t v) {
  return static_cast<std::int64_t>(v >> 1) ^ -static_cast<std::int64_t>(v & 1);
}

inline bool DecodePcEntry(const std::uint8_t* file, const std::uint8_t*& in,
                          const std::uint8_t* end, std::uint64_t prev_pc, std::uint64_t index,
                          PcRecord* out) {
  out->pc = prev_pc + GetVarint(in, end);
  const std::uint64_t head = GetVarint(in, end);
  out->count = head >> 1;
  if (head & 1) {
    const std::uint64_t shift = GetVarint(in, end) & ~kFollowerTag;
    out->skips_offset = index - shift - static_cast<std::uint64_t>(UnZigZag(GetVarint(in, end)));
    out->data_offset = kFollowerTag | shift;
    return true;
  }
  const bool skips = out->count > kPostingsPerBlock;
  if (!skips) out->skips_offset = GetVarint(in, end);
  const std::uint64_t size = GetVarint(in, end);
  const std::uint64_t left = static_cast<std::uint64_t>(end - in);
  if (skips && out->count / kPostingsPerBlock > left) {
    in = end;
    return false;
  }
  const std::uint64_t table =
      skips ? (out->count + kPostingsPerBlock - 1) / kPostingsPerBlock * sizeof(SkipRecord) : 0;
  if (table > left || size > left - table) {
    in = end;
    return false;
  }
  out->data_offset = static_cast<std::uint64_t>(in - file);
  if (skips) {
    out->skips_offset = out->data_offset;
    out->data_offset += table;
  }
  in = file + out->data_offset + size;
  return true;
}

// Line mask of bytes [offset, offset + length) of a page.
inline std::uint64_t LineMask(std::uint32_t offset, std::uint32_t length) {
  const std::uint32_t first = offset / 64, last = (offset + length - 1) / 64;
  const std::uint64_t hi = last >= 63 ? ~std::uint64_t(0) : (std::uint64_t(2) << last) - 1;
  return hi & ~((std::uint64_t(1) << first) - 1);
}

}  // namespace backstep::core
