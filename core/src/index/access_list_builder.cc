#include "index/access_list_builder.h"

#include <algorithm>
#include <cstring>

namespace backstep::core {

AccessListBuilder::AccessListBuilder(std::uint32_t block_entries, std::uint32_t snapshot_blocks,
                                     bool snapshots, std::span<const std::uint8_t> trace_bytes)
    : block_entries_(block_entries),
      snapshot_blocks_(snapshot_blocks),
      snapshots_(snapshots),
      trace_bytes_(trace_bytes) {}

void AccessListBuilder::ClearMemory(std::uint64_t event) {
  ++epoch_;
  last_clear_ = event;
}

bool AccessListBuilder::Seen(std::uint64_t page) const {
  const auto it = seen_.find(page >> 9);
  return it != seen_.end() && (it->second[(page >> 6) & 7] >> (page & 63)) & 1;
}

void AccessListBuilder::StartSegment(std::uint64_t first_event, bool history_complete) {
  segment_first_ = first_event;
  history_complete_ = history_complete;
}

// A state last touched before a clear: everything is unknown since, and the
// state (kept up to date with every write after the clear) is complete.
void AccessListBuilder::ResetIfCleared(PageState& state) const {
  if (state.epoch == epoch_) return;
  std::memset(state.known, 0, sizeof(state.known));
  state.epoch = epoch_;
  state.complete = true;
}

// Once per write piece to a hot page: the common sizes (1, 2, 4, 8 bytes)
// copy with a constant size, inlined, instead of two library calls.
void AccessListBuilder::ApplyToState(PageState& state, std::uint32_t offset,
                                     std::span<const std::uint8_t> data) {
  ResetIfCleared(state);
  std::uint8_t* values = state.values + offset;
  std::uint8_t* known = state.known + offset;
  constexpr std::uint64_t kOnes = 0x0101010101010101ull;
  switch (data.size()) {
    case 1:
      *values = data[0], *known = 1;
      return;
    case 2:
      std::memcpy(values, data.data(), 2), std::memcpy(known, &kOnes, 2);
      return;
    case 4:
      std::memcpy(values, data.data(), 4), std::memcpy(known, &kOnes, 4);
      return;
    case 8:
      std::memcpy(values, data.data(), 8), std::memcpy(known, &kOnes, 8);
      return;
    default:
      std::memcpy(values, data.data(), data.size());
      std::memset(known, 1, data.size());
  }
}

// The page's write-state from its buffered entries (a page's first snapshot).
void AccessListBuilder::Rebuild(Page& page, PageState& state) const {
  std::memset(state.known, 0, sizeof(state.known));
  state.epoch = epoch_;
  // Complete when no earlier segment can hold a write since the last clear.
  // (Rebuild runs from Add, for page last_page_number_.)
  state.complete = (history_complete_ && !Seen(last_page_number_)) ||
                   (epoch_ > 0 && last_clear_ >= segment_first_);
  const std::uint8_t* held = page.event_data.data();
  for (const BlockRecord& block : page.blocks) {
    const std::uint8_t* block_data = page.data.data() + block.data_offset;
    EntryDecoder decoder(block_data, block_data + block.data_size, block.first_event);
    for (std::uint32_t i = 0; i < block.entry_count; ++i) {
      const AccessEntry e = decoder.Next();
      const std::uint8_t* data = e.ref ? trace_bytes_.data() + e.ref_offset : e.data;
      if (e.event_ref) data = held, held += e.length;
      if (epoch_ > 0 && e.event < last_clear_) continue;
      std::memcpy(state.values + e.offset, data, e.length);
      std::memset(state.known + e.offset, 1, e.length);
    }
  }
}

void AccessListBuilder::TakeSnapshot(Page& page) {
  if (!page.state) {
    page.state = std::make_unique<PageState>();
    Rebuild(page, *page.state);
    memory_bytes_ += sizeof(PageState);
    memory_bytes_ -= page.event_data.size();
    page.event_data = {};
  }
  PageState& state = *page.state;
  ResetIfCleared(state);
  WriteSnapshot(page, page.blocks.size(), state);
}

void AccessListBuilder::WriteSnapshot(Page& page, std::uint64_t block_index,
                                      const PageState& state) {
  page.snapshots.push_back(
      {block_index, page.snapshot_data.size(), state.complete ? kSnapshotComplete : 0});
  const std::size_t base = page.snapshot_data.size();
  page.snapshot_data.resize(base + kSnapshotSize);
  std::uint8_t* mask = page.snapshot_data.data() + base;
  std::uint8_t* values = mask + kPageSize / 8;
  for (std::uint32_t i = 0; i < kPageSize; ++i) {
    if (state.known[i]) {
      mask[i / 8] |= std::uint8_t(1u << (i % 8));
      values[i] = state.values[i];
    }
  }
  memory_bytes_ += kSnapshotSize + sizeof(SnapshotRecord);
}

void AccessListBuilder::OpenBlock(Page& page, std::uint64_t event) {
  if (snapshots_ && !page.blocks.empty() && page.blocks.size() % snapshot_blocks_ == 0) {
    TakeSnapshot(page);
  }
  page.blocks.push_back({event, 0, page.data.size(), 0, 0});
  page.last_event = event;
  page.last_ref = 0;
  std::memset(page.bases, 0, sizeof(page.bases));
  if (page.xor_table) std::memset(page.xor_table->tags, 0, sizeof(page.xor_table->tags));
  if (page.recent) page.recent->fill(~std::uint64_t(0));  // key kNoRepeat: no entry
  memory_bytes_ += sizeof(BlockRecord);
}

BlockRecord& AccessListBuilder::OpenBlockIfFull(Page& page, std::uint64_t event) {
  if (page.blocks.empty() || page.blocks.back().entry_count == block_entries_) {
    OpenBlock(page, event);
  }
  return page.blocks.back();
}

void AccessListBuilder::LookUpPage(std::uint64_t number) {
  PageSlot& slot = page_cache_[(number * 0x9E3779B97F4A7C15ull) >> (64 - kPageCacheBits)];
  if (!slot.page || slot.number != number) {
    auto [it, inserted] = pages_.try_emplace(number);
    if (inserted) {
      memory_bytes_ += 96;
      if (auto carried = carried_.find(number); carried != carried_.end()) {
        it->second.state = std::move(carried->second);
        carried_.erase(carried);
      }
    }
    slot = {number, &it->second};
  }
  last_page_ = slot.page;
  last_page_number_ = number;
}

// Stride form (index_format.h): the previous entry's delta and code, the
// offset advanced by the previous stride.
bool AccessListBuilder::IsStride(const Page& page, std::uint32_t index, std::uint64_t delta,
                                 std::uint32_t offset) {
  return index >= 2 && delta == page.last_delta &&
         offset == ((2 * (page.last_head & 0xfff) - page.before_offset) & 0xfff);
}

// Repeat form: the latest of the last kRepeatWindow entries of the block
// with the same key; 0 if none. Records the entry under its key.
std::uint32_t AccessListBuilder::RepeatBack(Page& page, std::uint32_t key, std::uint32_t index) {
  std::uint32_t back = 0;
  if (!page.recent && ++page.entries >= kRecentAfter) {
    page.recent = std::make_unique<std::array<std::uint64_t, 1 << kRecentBits>>();
    page.recent->fill(~std::uint64_t(0));
    memory_bytes_ += sizeof(*page.recent);
  }
  if (key != kNoRepeat && page.recent) {
    // The latest entry with this key, unless another key took its slot.
    std::uint64_t& recent = (*page.recent)[(key * 0x9E3779B97F4A7C15ull) >> (64 - kRecentBits)];
    if (recent >> 32 == key && index - static_cast<std::uint32_t>(recent) <= kRepeatWindow) {
      back = index - static_cast<std::uint32_t>(recent);
    }
    recent = std::uint64_t(key) << 32 | index;
  }
  return back;
}

void AccessListBuilder::NoteHead(Page& page, std::uint32_t head17, std::uint64_t delta) {
  page.before_offset = page.last_head & 0xfff;
  page.last_head = head17;
  page.last_delta = delta;
  page.last_length = 0;
}

void AccessListBuilder::EndEntry(Page& page, BlockRecord& block, std::uint64_t event,
                                 std::uint32_t offset, std::span<const std::uint8_t> data,
                                 std::size_t bytes) {
  memory_bytes_ += bytes;
  block.data_size += static_cast<std::uint32_t>(bytes);
  block.line_mask |= LineMask(offset, static_cast<std::uint32_t>(data.size()));
  ++block.entry_count;
  page.last_event = event;
  if (page.state) ApplyToState(*page.state, offset, data);
}

void AccessListBuilder::AddRefEntry(std::uint64_t event, std::uint32_t offset,
                                    std::span<const std::uint8_t> data, std::uint64_t ref) {
  Page& page = *last_page_;
  BlockRecord& block = OpenBlockIfFull(page, event);
  const std::uint32_t code = RefCode(static_cast<std::uint32_t>(data.size()));
  const std::uint32_t index = block.entry_count;
  const std::uint64_t delta = event - page.last_event;
  const bool stride = IsStride(page, index, delta, offset);
  const std::uint32_t head17 = offset | code << 12;
  const std::uint32_t key =
      delta < kRepeatMaxDelta ? static_cast<std::uint32_t>(delta << 17) | head17 : kNoRepeat;
  const std::uint32_t back = RepeatBack(page, key, index);
  std::uint8_t* const head = page.data.Reserve(kMaxEntryBytes + 16);  // in place (Reserve)
  std::uint8_t* p = head;
  if (back != 0) {
    PutVarint(std::uint64_t(back - 1) << 1 | 1, p);
  } else if (stride && (head17 & ~0xfffu) == (page.last_head & ~0xfffu)) {
    PutVarint(std::uint64_t(kStrideForm) << 1 | 1, p);
  } else {
    PutVarint(delta << 2, p);
    const auto h = static_cast<std::uint16_t>(head17);
    std::memcpy(p, &h, 2);
    p += 2;
  }
  NoteHead(page, head17, delta);
  PutVarint(ZigZag(static_cast<std::int64_t>(ref - page.last_ref)), p);
  page.last_ref = ref;
  page.data.Commit(p - head);
  EndEntry(page, block, event, offset, data, p - head);
}

void AccessListBuilder::AddEntry(std::uint64_t event, std::uint32_t offset,
                                 std::span<const std::uint8_t> data, std::uint64_t ref,
                                 std::uint64_t piece_offset, std::uint64_t access_length,
                                 const EventDataRef* event_ref) {
  std::optional<std::uint64_t> ref_offset;
  if (ref != kNoRefOffset) ref_offset = ref;
  Page& page = *last_page_;
  BlockRecord& block = OpenBlockIfFull(page, event);
  const std::uint32_t length = static_cast<std::uint32_t>(data.size());
  const bool split = piece_offset != 0 || access_length != length;
  std::uint32_t code = 0;  // extended
  if (without_data_) ref_offset.reset(), event_ref = nullptr;
  if (event_ref) {
    ref_offset.reset();
  } else if (!split && ref_offset) {
    for (std::uint32_t k = 0; k < 4; ++k) {
      if (length == kRefLengths[k]) code = kMaxInlineCode + 1 + k;
    }
  } else if (!split && length <= kMaxInlineCode) {
    code = length;
  }
  const std::uint32_t index = block.entry_count;
  const std::uint64_t delta = event - page.last_event;
  // Stride form (index_format.h): the previous entry's delta and code, the
  // offset advanced by the previous stride; with the previous data too, no
  // data at all (an array filled with one value).
  const bool stride = IsStride(page, index, delta, offset);
  const bool inline_short = code >= 1 && code <= kMaxInlineCode && !without_data_;
  const bool same_data = stride && inline_short && page.last_length == length &&
                         std::memcmp(page.last_data, data.data(), length) == 0;
  // XOR form: short data of 2, 4, 8 or 16 bytes as the XOR with the
  // block's previous short data of its length at its offset, else of its
  // length (index_format.h, XorTableSlot), when that has fewer significant
  // bytes than the data.
  bool xor_form = false;
  std::uint64_t x[2] = {};
  std::uint32_t stored = 0;
  const bool inline16 =
      length == 16 && code == 0 && !split && !ref_offset && !event_ref && !without_data_;
  if (const int slot = inline_short || inline16 ? XorSlot(length) : -1; slot >= 0) {
    std::uint64_t value[2] = {};
    std::memcpy(value, data.data(), length);
    if (!page.xor_table) {
      page.xor_table = std::make_unique<XorTable>();
      std::memset(page.xor_table->tags, 0, sizeof(page.xor_table->tags));
      memory_bytes_ += sizeof(XorTable);
    }
    XorTable& table = *page.xor_table;
    const std::uint32_t t = XorTableSlot(offset);
    const std::uint16_t tag = XorTableTag(offset, slot);
    const std::uint64_t* base = table.tags[t] == tag ? table.values[t] : page.bases[slot];
    x[0] = value[0] ^ base[0];
    x[1] = value[1] ^ base[1];
    stored = x[1] != 0   ? 8 + (64 - static_cast<std::uint32_t>(__builtin_clzll(x[1])) + 7) / 8
             : x[0] != 0 ? (64 - static_cast<std::uint32_t>(__builtin_clzll(x[0])) + 7) / 8
                         : 0;
    if (!same_data && index < kXorEntries && stored < length) {
      xor_form = true;
      code = XorCode(length, stored);
    }
    // (unchanged by a same-data entry)
    std::memcpy(page.bases[slot], value, sizeof(value));
    table.tags[t] = tag;
    std::memcpy(table.values[t], value, sizeof(value));
  }
  std::uint32_t head17 = offset | code << 12 | (xor_form ? 1u << 16 : 0);
  if (same_data) head17 = (page.last_head & ~0xfffu) | offset, xor_form = false;
  // Repeat form: the latest of the last kRepeatWindow entries of the block
  // with the same event delta, xor flag and head.
  const bool short_form = code != 0 || (head17 >> 16) != 0;
  const std::uint32_t key = short_form && delta < kRepeatMaxDelta
                                ? static_cast<std::uint32_t>(delta << 17) | head17
                                : kNoRepeat;
  const std::uint32_t back = RepeatBack(page, key, index);
  const std::size_t before = page.data.size();
  std::uint8_t* const head = page.data.Reserve(kMaxEntryBytes + 16);  // in place (Reserve)
  std::uint8_t* p = head;
  if (same_data) {
    PutVarint(std::uint64_t(kStrideForm + 1) << 1 | 1, p);
  } else if (back != 0) {
    PutVarint(std::uint64_t(back - 1) << 1 | 1, p);
  } else if (stride && short_form && (head17 & ~0xfffu) == (page.last_head & ~0xfffu)) {
    PutVarint(std::uint64_t(kStrideForm) << 1 | 1, p);
  } else {
    PutVarint(delta << 2 | (xor_form ? 2 : 0), p);
    const auto h = static_cast<std::uint16_t>(offset | code << 12);
    std::memcpy(p, &h, 2);
    p += 2;
  }
  NoteHead(page, head17, delta);
  if (inline_short) {
    page.last_length = length;
    std::memcpy(page.last_data, data.data(), length);
  }
  if (xor_form) {
    if (length == 16) *p++ = static_cast<std::uint8_t>(stored);
    std::memcpy(p, x, stored);  // the low bytes (little-endian)
    p += stored;
  }
  if (code == 0 && !xor_form) {
    PutVarint(std::uint64_t(length) << 3 | (ref_offset ? kEntryRef : 0) |
                  (split ? kEntrySplit : 0) | (event_ref ? kEntryEvent : 0),
              p);
    if (split) {
      PutVarint(piece_offset, p);
      PutVarint(access_length, p);
    }
  }
  if (ref_offset) {
    PutVarint(ZigZag(static_cast<std::int64_t>(*ref_offset - page.last_ref)), p);
    page.last_ref = *ref_offset;
  }
  if (event_ref) {
    PutVarint(event_ref->write_index, p);
    PutVarint(event_ref->reader_offset, p);
    PutVarint(event_ref->reader_aux, p);
    // Kept for Rebuild() (the page's first snapshot), never written; a page
    // with a state has had its Rebuild().
    if (!page.state) {
      page.event_data.insert(page.event_data.end(), data.begin(), data.end());
      memory_bytes_ += data.size();
    }
  }
  page.data.Commit(p - head);
  if (!ref_offset && !event_ref && !without_data_ && !xor_form && !same_data) {
    page.data.Append(data.data(), data.size());
  }
  EndEntry(page, block, event, offset, data, page.data.size() - before);
}

void AccessListBuilder::AddOtherEntry(std::uint64_t event, std::uint32_t offset,
                                      std::span<const std::uint8_t> data, std::uint64_t ref,
                                      std::uint64_t piece_offset, std::uint64_t access_length,
                                      const EventDataRef* event_ref) {
  AddEntry(event, offset, data, ref, piece_offset, access_length, event_ref);
}

void AccessListBuilder::AddInlineEntry(std::uint64_t event, std::uint32_t offset,
                                       std::span<const std::uint8_t> data) {
  AddEntry(event, offset, data, kNoRefOffset, 0, data.size(), nullptr);
}

ListRecord AccessListBuilder::Flush(IndexSink& sink, bool end_snapshots) {
  std::vector<std::uint64_t> order;
  order.reserve(pages_.size());
  for (const auto& [number, page] : pages_) order.push_back(number);
  std::sort(order.begin(), order.end());
  std::vector<PageRecord> records;
  records.reserve(order.size());
  for (std::uint64_t number : order) {
    Page& page = pages_.at(number);
    if (page.state) {
      ResetIfCleared(*page.state);
      if (end_snapshots) WriteSnapshot(page, page.blocks.size(), *page.state);
    }
    const std::uint64_t data_base = sink.size();
    sink.Write(page.data.bytes());
    sink.Pad8();
    const std::uint64_t snapshot_base = sink.size();
    sink.Write(page.snapshot_data);
    for (BlockRecord& b : page.blocks) b.data_offset += data_base;
    for (SnapshotRecord& s : page.snapshots) s.data_offset += snapshot_base;
    PageRecord rec{number, sink.size(), static_cast<std::uint32_t>(page.blocks.size()),
                   static_cast<std::uint32_t>(page.snapshots.size()), 0};
    sink.WriteRecords<BlockRecord>(page.blocks);
    rec.snapshots_offset = sink.size();
    sink.WriteRecords<SnapshotRecord>(page.snapshots);
    records.push_back(rec);
    if (page.state) carried_.emplace(number, std::move(page.state));
    if (history_complete_ && snapshots_) {
      seen_[number >> 9][(number >> 6) & 7] |= std::uint64_t(1) << (number & 63);
    }
    page = Page();  // release memory as we go
  }
  ListRecord list{sink.size(), records.size()};
  sink.WriteRecords<PageRecord>(records);
  // Over the budget, drop the states of pages not written in this segment,
  // then any: a dropped page rebuilds its state (incomplete) if it gets hot
  // again, and queries then also look at earlier segments.
  const std::uint64_t max_states = carry_budget_ / sizeof(PageState);
  if (carried_.size() > max_states) {
    std::erase_if(carried_, [&](const auto& kv) { return !pages_.contains(kv.first); });
  }
  while (carried_.size() > max_states) carried_.erase(carried_.begin());
  pages_.clear();
  page_cache_.fill({});
  last_page_ = nullptr;
  memory_bytes_ = carried_.size() * sizeof(PageState);
  return list;
}

}  // namespace backstep::core
