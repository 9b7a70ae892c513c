// Access-list entries as queries see them (AccessEntry) and their decoder
// (EntryDecoder): the read side of the entry encoding that index_format.h
// describes ("access-list entries"); AccessListBuilder is the write side.
//
// Thread-safety: a decoder is used by one thread; entries are values.
#pragma once

#include <cstdint>
#include <cstring>

#include "index/index_format.h"

namespace backstep::core {

// Where the data of an event-referenced piece is: write `write_index` of
// the event a reader decodes next after Seek({reader_offset, reader_aux}).
struct EventDataRef {
  std::uint64_t write_index = 0;
  std::uint64_t reader_offset = 0;
  std::uint64_t reader_aux = 0;
};

// What entries without data (kDirReadsWithoutData) hand out.
inline constexpr std::uint8_t kNoDataBytes[kPageSize] = {};

struct AccessEntry {
  std::uint64_t event = 0;
  std::uint32_t offset = 0;  // in the page
  std::uint32_t length = 0;
  bool ref = false;
  // `data` points into the EntryDecoder that returned the entry (XOR form),
  // not into the index: valid while that decoder lives.
  bool decoded = false;
  std::uint64_t piece_offset = 0;      // offset of this piece in the whole access
  std::uint64_t access_length = 0;     // length of the whole access
  const std::uint8_t* data = nullptr;  // inline bytes (null when ref or event_ref)
  std::uint64_t ref_offset = 0;        // trace-file offset when ref
  bool event_ref = false;              // the data is the event's (`source`)
  EventDataRef source;
};

// Decodes the entries of one block, [in, end), in order. Every entry it
// returns lies in its page (offset + length <= kPageSize), is a piece of
// its access (piece_offset + length <= access_length) and has its inline
// data inside the block; an entry that would not (only in a damaged or
// crafted file: the builder never writes one) is returned empty (length 0)
// and so are all after it. `without_data`: the block's entries that are not
// references hold no data bytes (kDirReadsWithoutData); their data is
// kNoDataBytes. The data of an XOR-form entry is decoded into the decoder
// (AccessEntry::decoded), so a decoder is not copied once it has started.
class EntryDecoder {
 public:
  EntryDecoder(const std::uint8_t* in, const std::uint8_t* end, std::uint64_t first_event,
               bool without_data = false)
      : in_(in), end_(end), event_(first_event), without_data_(without_data) {
    std::memset(xor_tags_, 0, sizeof(xor_tags_));
  }
  AccessEntry Next() {
    AccessEntry e;
    Read(e);
    return e;
  }
  // The same into `e`, every field of which it sets: a loop over thousands
  // of entries (the write-state walk) reuses one object instead of
  // clearing a new one each time. Inlined for that loop.
  [[gnu::always_inline]] void Read(AccessEntry& e) {
    if (!Decode(e)) Break(e);
  }

 private:
  // Decodes the next entry into `e` (every field); false if it is broken.
  [[gnu::always_inline]] bool Decode(AccessEntry& e) {
    const std::uint32_t i = index_++;
    const std::uint64_t v = GetVarint(in_, end_);
    std::uint64_t delta;
    std::uint32_t head;  // u16 head | xor << 16
    const std::uint8_t* last_data = last_data_;
    const bool last_decoded = last_decoded_;
    last_data_ = nullptr;
    bool same_data = false;
    if (v & 1) {
      const std::uint64_t r = v >> 1;
      if (r < kRepeatWindow) {
        const std::uint64_t back = r + 1;
        if (back > i) return false;
        const std::uint32_t from = (i - static_cast<std::uint32_t>(back)) % kRepeatRing;
        delta = deltas_[from];
        head = heads_[from];
      } else {
        if (r > kStrideForm + 1 || i < 2) return false;
        const std::uint32_t last = heads_[(i - 1) % kRepeatRing];
        const std::uint32_t before = heads_[(i - 2) % kRepeatRing];
        delta = deltas_[(i - 1) % kRepeatRing];
        head = (last & ~0xfffu) | ((2 * (last & 0xfff) - (before & 0xfff)) & 0xfff);
        same_data = r == kStrideForm + 1;
      }
    } else {
      if (end_ - in_ < 2) return false;
      delta = v >> 2;
      head = LoadRecord<std::uint16_t>(in_) | static_cast<std::uint32_t>(v & 2) << 15;
      in_ += 2;
    }
    deltas_[i % kRepeatRing] = delta;
    heads_[i % kRepeatRing] = head;
    e.event = event_ += delta;
    e.piece_offset = 0;
    e.data = nullptr;
    e.decoded = false;
    e.ref_offset = 0;
    e.event_ref = false;
    e.source = {};
    e.offset = head & 0xfff;
    const std::uint32_t code = (head >> 12) & 0xf;
    if (same_data) {
      e.ref = false;
      e.length = head >> 16 ? XorLength(code) : code;
      e.access_length = e.length;
      // (the previous entry's data: inline, or an XOR form of 2-8 bytes)
      if (!last_data || code > (head >> 16 ? kXor16Code - 1 : kMaxInlineCode) || e.length == 0 ||
          e.offset + std::uint64_t{e.length} > kPageSize) {
        return false;
      }
      e.data = last_data_ = last_data;
      e.decoded = last_decoded_ = last_decoded;
      if (const int slot = XorSlot(e.length); slot >= 0) Remember(e, slot);
      return true;
    }
    if (head >> 16) return DecodeXor(e, code, i);
    if (code != 0) {
      // The short forms (nearly every entry): a whole access, no extension.
      e.ref = code > kMaxInlineCode;
      e.length = e.ref ? kRefLengths[code - kMaxInlineCode - 1] : code;
      e.access_length = e.length;
      if (e.offset + std::uint64_t{e.length} > kPageSize) return false;
      if (e.ref) {
        e.ref_offset = ref_ += static_cast<std::uint64_t>(UnZigZag(GetVarint(in_, end_)));
        return true;
      }
      if (!TakeData(e)) return false;
      if (!without_data_) last_data_ = e.data, last_decoded_ = false;
      if (const int slot = XorSlot(code); slot >= 0 && !without_data_) Remember(e, slot);
      return true;
    }
    e.ref = false;
    const std::uint64_t x = GetVarint(in_, end_);
    if ((x >> 3) > kPageSize || ((x & kEntryRef) && (x & kEntryEvent))) return false;
    e.length = static_cast<std::uint32_t>(x >> 3);
    e.ref = x & kEntryRef;
    e.event_ref = x & kEntryEvent;
    if (x & kEntrySplit) {
      e.piece_offset = GetVarint(in_, end_);
      e.access_length = GetVarint(in_, end_);
    } else {
      e.access_length = e.length;
    }
    if (e.offset + std::uint64_t{e.length} > kPageSize || e.piece_offset > e.access_length ||
        e.length > e.access_length - e.piece_offset) {
      return false;
    }
    if (e.ref) {
      e.ref_offset = ref_ += static_cast<std::uint64_t>(UnZigZag(GetVarint(in_, end_)));
    } else if (e.event_ref) {
      e.source.write_index = GetVarint(in_, end_);
      e.source.reader_offset = GetVarint(in_, end_);
      e.source.reader_aux = GetVarint(in_, end_);
    } else {
      if (!TakeData(e)) return false;
      // Inline 16 bytes: the next XOR base of 16 bytes.
      if (e.length == 16 && !(x & kEntrySplit) && !without_data_) Remember(e, XorSlot(16));
    }
    return true;
  }

  // An XOR-form entry, number `i` of the block.
  bool DecodeXor(AccessEntry& e, std::uint32_t code, std::uint32_t i) {
    e.ref = false;
    e.length = XorLength(code);
    e.access_length = e.length;
    if (without_data_ || code > kXor16Code || i >= kXorEntries ||
        e.offset + std::uint64_t{e.length} > kPageSize || (code == kXor16Code && in_ == end_)) {
      return false;
    }
    const std::uint32_t k = code == kXor16Code ? *in_++ : XorStored(code);
    if (k >= e.length || static_cast<std::uint64_t>(end_ - in_) < k) return false;
    std::uint64_t value[2] = {};
    std::memcpy(value, in_, k);
    in_ += k;
    const int slot = XorSlot(e.length);
    const std::uint32_t t = XorTableSlot(e.offset);
    const std::uint64_t* base =
        xor_tags_[t] == XorTableTag(e.offset, slot) ? xor_values_[t] : bases_[slot];
    value[0] ^= base[0];
    value[1] ^= base[1];
    std::uint8_t* out = values_ + 16 * i;
    std::memcpy(out, value, 16);
    e.data = out;
    e.decoded = true;
    Remember(e, slot);
    // Data a same-data stride form can repeat: 2-8 bytes (as the builder).
    if (e.length <= 8) last_data_ = out, last_decoded_ = true;
    return true;
  }

  // The data of entry `e`, of length XorSlot `slot`: the next XOR bases
  // (index_format.h, XorTableSlot).
  void Remember(const AccessEntry& e, int slot) {
    std::uint64_t value[2] = {};
    std::memcpy(value, e.data, e.length);
    bases_[slot][0] = value[0];
    bases_[slot][1] = value[1];
    const std::uint32_t t = XorTableSlot(e.offset);
    xor_tags_[t] = XorTableTag(e.offset, slot);
    xor_values_[t][0] = value[0];
    xor_values_[t][1] = value[1];
  }

  // An entry's inline data (none when the block holds no data).
  bool TakeData(AccessEntry& e) {
    if (without_data_) {
      e.data = kNoDataBytes;
      return true;
    }
    if (static_cast<std::uint64_t>(end_ - in_) < e.length) return false;
    e.data = in_;
    in_ += e.length;
    return true;
  }

  void Break(AccessEntry& e) {
    in_ = end_;
    e.offset = 0;  // overlaps nothing
    e.length = 0;
    e.ref = false;
    e.decoded = false;
    e.event_ref = false;
    e.data = in_;
    e.piece_offset = 0;
    e.access_length = 0;
  }

  const std::uint8_t* in_;
  const std::uint8_t* end_;
  std::uint64_t event_;
  std::uint64_t ref_ = 0;
  bool without_data_;
  std::uint32_t index_ = 0;         // entries decoded so far
  std::uint64_t bases_[4][2] = {};  // XOR bases of short data of 8, 4, 2, 16 bytes
  // The last short data by offset (XorTableSlot): tag 0 = none.
  std::uint16_t xor_tags_[kXorTableSize];
  std::uint64_t xor_values_[kXorTableSize][2];
  // The previous entry's inline data (null: none) and whether it is in values_.
  const std::uint8_t* last_data_ = nullptr;
  bool last_decoded_ = false;
  std::uint64_t deltas_[kRepeatRing];  // the last entries' event deltas and heads
  std::uint32_t heads_[kRepeatRing];
  std::uint8_t values_[16 * kXorEntries];  // XOR-form entries' data
};

}  // namespace backstep::core
