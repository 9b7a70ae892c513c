// PcTable: one segment's pc table (index_format.h, "The pc table"), read
// straight from the mapping of a validated index.
//
// A lookup is a binary search over the group records, then the decode of at
// most kPcsPerGroup entries; a follower's leader costs one more such
// lookup by index. Thread-safety: immutable.
#pragma once

#include <cstdint>
#include <optional>

#include "index/index_format.h"

namespace backstep::core {

class PcTable {
 public:
  // `file` is the index's first byte, `end` the footer's.
  PcTable(const std::uint8_t* file, const std::uint8_t* end, const SegmentRecord& seg)
      : file_(file), end_(end), groups_(file + seg.pcs_offset), count_(seg.pc_count) {}

  std::uint64_t count() const { return count_; }
  // Record `i` (< count()).
  PcRecord at(std::uint64_t i) const {
    const std::uint64_t g = i / kPcsPerGroup;
    const PcGroupRecord group = Group(g);
    const std::uint8_t* in = file_ + group.entries_offset;
    PcRecord rec{};
    rec.pc = group.first_pc;
    for (std::uint64_t j = g * kPcsPerGroup; j <= i; ++j) {
      DecodePcEntry(file_, in, end_, rec.pc, j, &rec);
    }
    return rec;
  }
  // The record of `pc`, if the segment executed it.
  std::optional<PcRecord> Find(std::uint64_t pc) const {
    std::optional<PcRecord> found;
    ForEachFrom(pc, [&](const PcRecord& rec) {
      if (rec.pc == pc) found = rec;
      return false;
    });
    return found;
  }
  // Calls f(record) for the records of pcs >= `lo` in increasing order
  // while it returns true.
  template <class F>
  void ForEachFrom(std::uint64_t lo, F f) const {
    const std::uint64_t groups = (count_ + kPcsPerGroup - 1) / kPcsPerGroup;
    std::uint64_t a = 0, b = groups;  // groups whose first pc is <= lo
    while (a < b) {
      const std::uint64_t mid = a + (b - a) / 2;
      if (Group(mid).first_pc <= lo) {
        a = mid + 1;
      } else {
        b = mid;
      }
    }
    for (std::uint64_t g = a == 0 ? 0 : a - 1; g < groups; ++g) {
      const PcGroupRecord group = Group(g);
      const std::uint8_t* in = file_ + group.entries_offset;
      PcRecord rec{};
      rec.pc = group.first_pc;
      const std::uint64_t last = std::min(count_, (g + 1) * kPcsPerGroup);
      for (std::uint64_t j = g * kPcsPerGroup; j < last; ++j) {
        DecodePcEntry(file_, in, end_, rec.pc, j, &rec);
        if (rec.pc >= lo && !f(rec)) return;
      }
    }
  }
  // The record whose postings `rec`'s are, shifted by `*shift` events
  // (`rec` itself and 0 but for a follower). Validation guarantees a leader
  // in the table that is no follower.
  PcRecord Postings(const PcRecord& rec, std::uint64_t* shift) const {
    *shift = 0;
    if (!IsFollower(rec)) return rec;
    *shift = FollowerShift(rec);
    return at(rec.skips_offset);
  }

 private:
  PcGroupRecord Group(std::uint64_t g) const {
    return LoadRecord<PcGroupRecord>(groups_ + g * sizeof(PcGroupRecord));
  }

  const std::uint8_t *file_, *end_, *groups_;
  std::uint64_t count_;
};

}  // namespace backstep::core
