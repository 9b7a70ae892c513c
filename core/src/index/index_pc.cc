// Pc-index queries of TraceIndex: postings are read straight from the
// mapping; a lookup is a binary search over the segment's pc groups and the
// decode of at most kPcsPerGroup entries (pc_table.h), one over the pc's skip table, and the decode
// of at most one block of kPostingsPerBlock varints. A follower's queries are its leader's,
// shifted.
#include <algorithm>

#include "index/pc_table.h"
#include "index/trace_index.h"

namespace backstep::core {

SkipRecord TraceIndex::SkipAt(const PcRecord& rec, std::uint64_t i) const {
  if (!HasSkipTable(rec)) return {rec.skips_offset, 0};
  return Rec<SkipRecord>(bytes_.data() + rec.skips_offset, i);
}

std::optional<std::uint64_t> TraceIndex::PostingAtOrAfter(const PcRecord& rec,
                                                          std::uint64_t from) const {
  const std::uint64_t blocks = (rec.count + kPostingsPerBlock - 1) / kPostingsPerBlock;
  auto skip = [&](std::uint64_t i) { return SkipAt(rec, i); };
  std::uint64_t lo = 0, hi = blocks;  // first block starting after `from`
  while (lo < hi) {
    const std::uint64_t mid = lo + (hi - lo) / 2;
    if (skip(mid).first_event <= from) {
      lo = mid + 1;
    } else {
      hi = mid;
    }
  }
  if (lo == 0) return skip(0).first_event;
  const SkipRecord s = skip(lo - 1);
  std::uint64_t value = s.first_event;
  if (value >= from) return value;
  const std::uint8_t* in = bytes_.data() + rec.data_offset + s.data_rel;
  const std::uint8_t* end = bytes_.data() + bytes_.size() - kFooterSize;  // Parse: in <= end
  PostingDeltas deltas{in, end};
  const std::uint64_t n =
      std::min<std::uint64_t>(kPostingsPerBlock, rec.count - (lo - 1) * kPostingsPerBlock) - 1;
  for (std::uint64_t j = 0; j < n; ++j) {
    value += deltas.Next();
    if (value >= from) return value;
  }
  if (lo < blocks) return skip(lo).first_event;
  return std::nullopt;
}

std::optional<std::uint64_t> TraceIndex::PostingBefore(const PcRecord& rec,
                                                       std::uint64_t before) const {
  const std::uint64_t blocks = (rec.count + kPostingsPerBlock - 1) / kPostingsPerBlock;
  auto skip = [&](std::uint64_t i) { return SkipAt(rec, i); };
  std::uint64_t lo = 0, hi = blocks;  // number of blocks starting before `before`
  while (lo < hi) {
    const std::uint64_t mid = lo + (hi - lo) / 2;
    if (skip(mid).first_event < before) {
      lo = mid + 1;
    } else {
      hi = mid;
    }
  }
  if (lo == 0) return std::nullopt;
  const SkipRecord s = skip(lo - 1);
  std::uint64_t value = s.first_event, best = value;
  const std::uint8_t* in = bytes_.data() + rec.data_offset + s.data_rel;
  const std::uint8_t* end = bytes_.data() + bytes_.size() - kFooterSize;  // Parse: in <= end
  PostingDeltas deltas{in, end};
  const std::uint64_t n =
      std::min<std::uint64_t>(kPostingsPerBlock, rec.count - (lo - 1) * kPostingsPerBlock) - 1;
  for (std::uint64_t j = 0; j < n; ++j) {
    value += deltas.Next();
    if (value >= before) break;
    best = value;
  }
  return best;
}

std::optional<std::uint64_t> TraceIndex::PostingAtOrAfter(const PcTable& table, const PcRecord& rec,
                                                          std::uint64_t from) const {
  std::uint64_t shift;
  const PcRecord postings = table.Postings(rec, &shift);
  const auto q = PostingAtOrAfter(postings, from > shift ? from - shift : 0);
  if (!q) return std::nullopt;
  return *q + shift;
}

PcTable TraceIndex::Pcs(const SegmentRecord& seg) const {
  return PcTable(bytes_.data(), bytes_.data() + bytes_.size() - kFooterSize, seg);
}

std::optional<std::uint64_t> TraceIndex::NextPcInSegment(const SegmentRecord& seg, Address pc,
                                                         std::uint64_t from) const {
  const PcTable table = Pcs(seg);
  const auto rec = table.Find(pc);
  if (!rec) return std::nullopt;
  return PostingAtOrAfter(table, *rec, from);
}

std::optional<std::uint64_t> TraceIndex::PrevPcInSegment(const SegmentRecord& seg, Address pc,
                                                         std::uint64_t before) const {
  const PcTable table = Pcs(seg);
  const auto found = table.Find(pc);
  if (!found) return std::nullopt;
  std::uint64_t shift;
  const PcRecord rec = table.Postings(*found, &shift);
  if (before <= shift) return std::nullopt;
  const auto q = PostingBefore(rec, before - shift);
  if (!q) return std::nullopt;
  return *q + shift;
}

std::optional<std::uint64_t> TraceIndex::NextPc(Address pc, std::uint64_t from) const {
  for (std::uint64_t s = SegmentIndexOf(from); s < dir_.segment_count; ++s) {
    const SegmentRecord seg = segment(s);
    if (seg.end_event <= from) continue;
    if (auto q = NextPcInSegment(seg, pc, from)) return q;
  }
  return std::nullopt;
}

std::optional<std::uint64_t> TraceIndex::PrevPc(Address pc, std::uint64_t before) const {
  if (before == 0 || dir_.segment_count == 0) return std::nullopt;
  for (std::uint64_t s = SegmentIndexOf(before - 1) + 1; s-- > 0;) {
    if (auto q = PrevPcInSegment(segment(s), pc, before)) return q;
  }
  return std::nullopt;
}

std::optional<std::uint64_t> TraceIndex::NextPcInRange(Address lo, Address hi,
                                                       std::uint64_t from) const {
  for (std::uint64_t s = SegmentIndexOf(from); s < dir_.segment_count; ++s) {
    const SegmentRecord seg = segment(s);
    if (seg.end_event <= from) continue;
    const PcTable table = Pcs(seg);
    std::optional<std::uint64_t> best;
    table.ForEachFrom(lo, [&](const PcRecord& rec) {
      if (rec.pc > hi) return false;
      auto q = PostingAtOrAfter(table, rec, from);
      if (q && (!best || *q < *best)) best = q;
      return true;
    });
    if (best) return best;
  }
  return std::nullopt;
}

std::uint64_t TraceIndex::PostingRank(const PcRecord& rec, std::uint64_t before) const {
  const std::uint64_t blocks = (rec.count + kPostingsPerBlock - 1) / kPostingsPerBlock;
  auto skip = [&](std::uint64_t i) { return SkipAt(rec, i); };
  std::uint64_t lo = 0, hi = blocks;  // number of blocks starting before `before`
  while (lo < hi) {
    const std::uint64_t mid = lo + (hi - lo) / 2;
    if (skip(mid).first_event < before) {
      lo = mid + 1;
    } else {
      hi = mid;
    }
  }
  if (lo == 0) return 0;
  // Every posting of the blocks before the last one counted is below
  // `before`; the last one is decoded.
  std::uint64_t rank = (lo - 1) * kPostingsPerBlock + 1;
  const SkipRecord s = skip(lo - 1);
  std::uint64_t value = s.first_event;
  const std::uint8_t* in = bytes_.data() + rec.data_offset + s.data_rel;
  const std::uint8_t* end = bytes_.data() + bytes_.size() - kFooterSize;  // Parse: in <= end
  PostingDeltas deltas{in, end};
  const std::uint64_t n =
      std::min<std::uint64_t>(kPostingsPerBlock, rec.count - (lo - 1) * kPostingsPerBlock) - 1;
  for (std::uint64_t j = 0; j < n; ++j) {
    value += deltas.Next();
    if (value >= before) break;
    ++rank;
  }
  return rank;
}

std::uint64_t TraceIndex::CountPc(Address pc, std::uint64_t from, std::uint64_t to) const {
  if (from >= to || dir_.segment_count == 0) return 0;
  std::uint64_t total = 0;
  for (std::uint64_t s = SegmentIndexOf(from); s < dir_.segment_count; ++s) {
    const SegmentRecord seg = segment(s);
    if (seg.first_event >= to) break;
    if (seg.end_event <= from) continue;
    const PcTable table = Pcs(seg);
    const auto found = table.Find(pc);
    if (!found) continue;
    std::uint64_t shift;
    const PcRecord rec = table.Postings(*found, &shift);
    auto rank = [&](std::uint64_t before) {
      return before <= shift ? 0 : PostingRank(rec, before - shift);
    };
    const std::uint64_t below_to = seg.end_event <= to ? rec.count : rank(to);
    const std::uint64_t below_from = seg.first_event >= from ? 0 : rank(from);
    total += below_to - below_from;
  }
  return total;
}

}  // namespace backstep::core
