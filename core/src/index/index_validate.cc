// Structural checks of a mapped index, run once by TraceIndex::Parse after
// the checksum matched. The checksum only proves the file is what some
// writer wrote, and anyone can compute it: every count and offset that a
// query later follows without checking is checked here against the file,
// with multiplications that cannot wrap. Entry bytes themselves are decoded
// with bounded readers (index_format.h) rather than checked here, so opening
// costs one pass over the records, not over the data.
#include <string>

#include "backstep/core/event.h"
#include "index/trace_index.h"
#include "util/hex.h"

namespace backstep::core {

bool TraceIndex::InFile(std::uint64_t offset, std::uint64_t count, std::uint64_t size) const {
  const std::uint64_t end = bytes_.size() - kFooterSize;
  return offset <= end && (size == 0 || count <= (end - offset) / size);
}

Status TraceIndex::CheckThreadsAndRuns() const {
  auto corrupt = [](const std::string& what) { return Status::Corruption("index: " + what); };
  if (dir_.event_count > 0 && dir_.run_count == 0) return corrupt("events without runs");
  std::uint64_t previous = 0;
  for (std::uint64_t r = 0; r < dir_.run_count; ++r) {
    const auto run = Rec<RunRecord>(runs_, r);
    if (run.thread_index >= dir_.thread_count || run.first_event < previous ||
        (r == 0 && run.first_event != 0)) {
      return corrupt("bad run " + std::to_string(r));
    }
    previous = run.first_event;
  }
  for (std::uint64_t i = 0; i < dir_.thread_count; ++i) {
    const ThreadRecord t = thread(i);
    for (std::uint64_t j = 0; j < t.run_count; ++j) {
      if (LoadRecord<std::uint64_t>(bytes_.data() + t.runs_offset + 8 * j) >= dir_.run_count) {
        return corrupt("bad run list of thread " + std::to_string(i));
      }
    }
  }
  return Status();
}

// Decodes every entry once: sorted pcs, entries inside the file, skip
// tables and postings inside it, followers naming a leader of the same count.
Status TraceIndex::CheckPcTable(std::uint64_t s) const {
  const SegmentRecord seg = segment(s);
  auto corrupt = [s](const std::string& what) {
    return Status::Corruption("index: segment " + std::to_string(s) + ": " + what);
  };
  const std::uint8_t* end = bytes_.data() + bytes_.size() - kFooterSize;
  std::vector<PcRecord> followers;
  std::vector<std::pair<std::uint64_t, bool>> counts;  // (count, follower) per entry
  counts.reserve(seg.pc_count);
  PcRecord rec{};
  const std::uint8_t* in = nullptr;
  for (std::uint64_t i = 0; i < seg.pc_count; ++i) {
    const std::uint64_t previous = rec.pc;
    if (i % kPcsPerGroup == 0) {
      const auto group = Rec<PcGroupRecord>(bytes_.data() + seg.pcs_offset, i / kPcsPerGroup);
      if (!InFile(group.entries_offset, 1, 1) || (i > 0 && group.first_pc <= previous)) {
        return corrupt("bad pc group " + std::to_string(i / kPcsPerGroup));
      }
      in = bytes_.data() + group.entries_offset;
      rec.pc = group.first_pc;
    }
    const std::uint64_t group_pc = rec.pc;
    if (!DecodePcEntry(bytes_.data(), in, end, rec.pc, i, &rec) || rec.count == 0 ||
        (i % kPcsPerGroup == 0 ? rec.pc != group_pc : rec.pc <= previous)) {
      return corrupt("bad pc entry " + std::to_string(i));
    }
    counts.emplace_back(rec.count, IsFollower(rec));
    if (IsFollower(rec)) {
      followers.push_back(rec);
      continue;
    }
    for (std::uint64_t b = 0; b * kPostingsPerBlock < rec.count; ++b) {
      const SkipRecord skip = SkipAt(rec, b);
      if (skip.data_rel > bytes_.size() || !InFile(rec.data_offset + skip.data_rel, 0, 0)) {
        return corrupt("bad postings of pc " + HexU64(rec.pc));
      }
    }
  }
  // Queries read the leader's postings once, with no further lookup.
  for (const PcRecord& f : followers) {
    const std::uint64_t shift = FollowerShift(f);
    if (f.skips_offset >= seg.pc_count || shift == 0 || shift >= dir_.event_count ||
        counts[f.skips_offset] != std::pair(f.count, false)) {
      return corrupt("bad follower pc " + HexU64(f.pc));
    }
  }
  return Status();
}

Status TraceIndex::CheckSegmentData(std::uint64_t s) const {
  const SegmentRecord seg = segment(s);
  auto corrupt = [s](const std::string& what) {
    return Status::Corruption("index: segment " + std::to_string(s) + ": " + what);
  };
  BACKSTEP_RETURN_IF_ERROR(CheckPcTable(s));
  for (int list = 0; list < kAccessListCount; ++list) {
    const ListRecord l = seg.lists[list];
    for (std::uint64_t i = 0; i < l.page_count; ++i) {
      const auto page = Rec<PageRecord>(bytes_.data() + l.pages_offset, i);
      if (!InFile(page.blocks_offset, page.block_count, sizeof(BlockRecord)) ||
          !InFile(page.snapshots_offset, page.snapshot_count, sizeof(SnapshotRecord))) {
        return corrupt("bad page record " + std::to_string(i));
      }
      for (std::uint64_t b = 0; b < page.block_count; ++b) {
        const auto block = Rec<BlockRecord>(bytes_.data() + page.blocks_offset, b);
        // An entry takes at least 1 byte (a repeat form): the decode of a
        // block stays inside its data.
        if (!InFile(block.data_offset, block.data_size, 1) ||
            std::uint64_t(block.entry_count) > block.data_size) {
          return corrupt("bad block " + std::to_string(b) + " of page " + std::to_string(i));
        }
      }
      for (std::uint64_t k = 0; k < page.snapshot_count; ++k) {
        const auto snap = Rec<SnapshotRecord>(bytes_.data() + page.snapshots_offset, k);
        if (snap.block_index > page.block_count || !InFile(snap.data_offset, kSnapshotSize, 1)) {
          return corrupt("bad snapshot " + std::to_string(k) + " of page " + std::to_string(i));
        }
      }
    }
  }
  return Status();
}

TraceIndex::Note TraceIndex::note(std::uint64_t i) const {
  const auto rec = Rec<NoteRecord>(notes_, i);
  return {
      rec.event, rec.tid, rec.kind,
      std::string_view(reinterpret_cast<const char*>(note_text_) + rec.text_offset, rec.text_size)};
}

Status TraceIndex::CheckNotes() const {
  if (dir_.note_count > 0 && !lists_notes()) {
    return Status::Corruption("index: noted events without the flag that lists them");
  }
  const std::uint64_t base = static_cast<std::uint64_t>(notes_ - bytes_.data());
  std::uint64_t next = 0;  // the smallest event the next record may have
  for (std::uint64_t i = 0; i < dir_.note_count; ++i) {
    const auto rec = Rec<NoteRecord>(notes_, i);
    std::string what;
    if (rec.event < next || rec.event >= dir_.event_count) {
      what = "event " + std::to_string(rec.event) + " out of order or past the end (" +
             std::to_string(dir_.event_count) + " events)";
    } else if (rec.kind > static_cast<std::uint32_t>(EventKind::kFrame)) {
      what = "bad event kind " + std::to_string(rec.kind);
    } else if (rec.text_offset > dir_.note_text_size ||
               rec.text_size > dir_.note_text_size - rec.text_offset) {
      what = "text past the note text (" + std::to_string(dir_.note_text_size) + " bytes)";
    }
    if (!what.empty()) {
      return Status::Corruption("index at offset " + HexU64(base + i * sizeof(NoteRecord)) +
                                ": noted event " + std::to_string(i) + ": " + what);
    }
    next = rec.event + 1;
  }
  return Status();
}

Status TraceIndex::CheckPlainSyscalls() const {
  const std::uint64_t count = dir_.plain_syscall_count;
  if (count > 0 && !lists_notes()) {
    return Status::Corruption("index: plain system calls without the flag that lists them");
  }
  const std::uint8_t* const start = plain_stream_;
  const std::uint8_t* const end = plain_stream_ + dir_.plain_syscall_stream_size;
  const std::uint8_t* in = start;
  // A varint that ends before `end`, in at most 10 bytes.
  auto varint = [&](std::uint64_t* v) {
    const std::uint8_t* limit = end - in > 10 ? in + 10 : end;
    const std::uint8_t* p = in;
    while (p < limit && (*p & 0x80)) ++p;
    if (p == limit) return false;
    *v = GetVarint(in, end);
    return true;
  };
  auto corrupt = [&](std::uint64_t at, std::uint64_t i, const std::string& what) {
    return Status::Corruption("index at offset " + HexU64(at) + ": plain system call " +
                              std::to_string(i) + ": " + what);
  };
  std::uint64_t event = 0;
  for (std::uint64_t i = 0; i < count; ++i) {
    const std::uint64_t at = static_cast<std::uint64_t>(in - bytes_.data());
    const bool first_of_block = i % kPlainSyscallsPerBlock == 0;
    std::uint64_t head = 0, number = 0, tid = 0;
    if (!varint(&head) || !varint(&number) || ((head & 1) && !varint(&tid))) {
      return corrupt(at, i, "cut short or malformed");
    }
    const std::uint64_t delta = head >> 1;
    if (first_of_block) {
      const auto skip = Rec<SyscallSkipRecord>(plain_skips_, i / kPlainSyscallsPerBlock);
      if (skip.offset != at - static_cast<std::uint64_t>(start - bytes_.data()) || delta != 0) {
        return corrupt(at, i,
                       "skip record " + std::to_string(i / kPlainSyscallsPerBlock) +
                           " does not start its block");
      }
      if ((i > 0 && skip.first_event <= event) || skip.first_event >= dir_.event_count) {
        return corrupt(at, i,
                       "event " + std::to_string(skip.first_event) +
                           " out of order or past the end (" + std::to_string(dir_.event_count) +
                           " events)");
      }
      event = skip.first_event;
    } else if (delta == 0 || delta >= dir_.event_count - event) {
      return corrupt(at, i,
                     "event delta " + std::to_string(delta) + " after event " +
                         std::to_string(event) + " out of order or past the end (" +
                         std::to_string(dir_.event_count) + " events)");
    } else {
      event += delta;
    }
  }
  if (in != end) {
    return Status::Corruption("index at offset " +
                              HexU64(static_cast<std::uint64_t>(in - bytes_.data())) +
                              ": bytes after the last plain system call");
  }
  return Status();
}

}  // namespace backstep::core
