#include "index/index_part_builder.h"

#include <algorithm>
#include <bit>
#include <cstring>
#include <memory>
#include <optional>
#include <unordered_map>
#include <vector>

#include "backstep/core/event_notes.h"
#include "index/access_list_builder.h"
#include "index/full_register_record.h"
#include "index/inference_tracker.h"
#include "index/pc_index_builder.h"

namespace backstep::core {
namespace {

constexpr std::uint64_t kProgressEvery = 1 << 16;

class IndexPartBuilder {
 public:
  IndexPartBuilder(TraceReader& reader, const IndexPartPlan& plan, IndexSink& sink)
      : reader_(reader),
        plan_(plan),
        sink_(sink),
        arch_(*reader.header().arch),
        source_(reader.source().data()),
        writes_(plan.block_entries, plan.snapshot_blocks, true, source_),
        reads_(plan.block_entries, plan.snapshot_blocks, false, source_),
        inferred_(plan.block_entries, plan.snapshot_blocks, false, source_),
        tracker_(reader, plan.seed_is_initial),
        pc_offset_(arch_.info(arch_.pc()).storage_offset),
        pc_is_u64_(arch_.info(arch_.pc()).size == 8 && std::endian::native == std::endian::little) {
  }

  Status Run(IndexTables* out);

 private:
  struct ThreadState {
    ThreadState(ThreadId t, const ArchDescription& arch) : tid(t), regs(arch), recorded(arch) {}
    ThreadId tid;
    RegisterFile regs;
    RegisterFile recorded;  // registers as of `record`
    bool dirty = false;
    std::uint64_t record = 0;
    std::uint32_t chain = 0;  // deltas since the last full record
    ThreadRecord out{};
    std::vector<std::uint64_t> runs;
  };

  std::uint64_t WriteRegisterRecord(const RegisterFile& regs);
  void WriteThreadRecord(ThreadState& t);
  // Inline for the previous event's thread (almost every event): the call
  // alone cost as much as the lookup.
  std::size_t ThreadIndex(ThreadId tid, std::uint64_t event) {
    if (has_last_ && tid.value == last_tid_) {
      ThreadState& t = *threads_[last_index_];
      if (t.out.first_event == kNoEvent) t.out.first_event = event;
      return last_index_;
    }
    return LookUpThread(tid, event);
  }
  std::size_t LookUpThread(ThreadId tid, std::uint64_t event);
  void Keyframe();
  void IndexEvent(const Event& e, std::uint64_t event);
  // `write_index`: the access's index in the event's writes (for reads: 0).
  // Inline: most accesses lie inside one page and infer nothing, one piece
  // added without a call of its own (or the split loop of AddPieces).
  // Inlined by force, as AddPiece: since Add selects the page and picks
  // AddRefEntry inline, GCC no longer inlines them on its own (at 10^6
  // events: +45 M instructions without AddPiece's, +19 M without AddAccess's).
  [[gnu::always_inline]] void AddAccess(AccessListBuilder& list, std::uint64_t event,
                                        const MemoryAccess& access, bool is_read,
                                        std::size_t write_index = 0) {
    const std::uint64_t total = access.data.size();
    const auto first = static_cast<std::uint32_t>(access.address & (kPageSize - 1));
    if (!infers_values_ && total != 0 && total <= kPageSize - first) {
      AddPiece(list, event, access.address >> kPageBits, first, access.data, 0, total, is_read,
               write_index);
    } else {
      AddPieces(list, event, access, is_read, write_index);
    }
  }
  // AddAccess's general case: the access split at page boundaries (and, for
  // reads, fed to the inference tracker).
  void AddPieces(AccessListBuilder& list, std::uint64_t event, const MemoryAccess& access,
                 bool is_read, std::size_t write_index);
  // One page piece of an access into `list` (data: the piece's bytes, at
  // `done` in the access of `total` bytes).
  [[gnu::always_inline]] void AddPiece(AccessListBuilder& list, std::uint64_t event,
                                       std::uint64_t page, std::uint32_t offset,
                                       std::span<const std::uint8_t> piece, std::uint64_t done,
                                       std::uint64_t total, bool is_read, std::size_t write_index) {
    const std::optional<std::uint64_t> ref = RefOffset(piece.data(), piece.size());
    if (!ref && !is_read && plan_.event_refs && piece.size() >= kMinEventReferencedLength) {
      const EventDataRef source{write_index, event_position_.offset, event_position_.aux};
      list.Add(event, page, offset, piece, std::nullopt, done, total, &source);
    } else {
      list.Add(event, page, offset, piece, ref, done, total);
    }
  }
  std::optional<std::uint64_t> RefOffset(const std::uint8_t* data, std::size_t length) const;
  std::uint64_t Pc(const RegisterFile& regs) const;
  void StartSegment(std::uint64_t first);
  // `last`: the index's last segment (no later segment needs end snapshots).
  void FlushSegment(std::uint64_t end, bool last);
  void Finish(std::uint64_t events, IndexTables* out);

  TraceReader& reader_;
  const IndexPartPlan& plan_;
  IndexSink& sink_;
  const ArchDescription& arch_;
  std::span<const std::uint8_t> source_;
  PcIndexBuilder pcs_;
  AccessListBuilder writes_, reads_, inferred_;
  InferenceTracker tracker_;
  // Where the pc lives in RegisterFile storage: read once per event, so
  // read directly (RegisterFile::u64 assembles bytes one by one).
  std::uint32_t pc_offset_;
  bool pc_is_u64_;
  bool records_reads_ = false;
  bool infers_values_ = false;  // reads carry their values (not placeholders)

  std::vector<std::unique_ptr<ThreadState>> threads_;
  std::unordered_map<std::uint64_t, std::size_t> thread_index_;
  std::optional<std::uint64_t> unknown_record_;
  std::vector<RunRecord> runs_;
  std::vector<KeyframeRecord> keyframes_;
  std::vector<std::uint64_t> memory_clears_;
  std::vector<RegisterClearRecord> register_clears_;
  std::vector<SegmentRecord> segments_;
  std::vector<NoteRecord> notes_;
  std::string note_text_;
  PlainSyscallWriter plain_syscalls_;
  std::uint64_t segment_first_ = 0;
  bool has_last_ = false;  // last_tid_ / last_index_: the previous event's thread
  std::uint64_t last_tid_ = 0;
  std::size_t last_index_ = 0;
  ReaderPosition event_position_;  // of the current event (plan_.event_refs)
  std::vector<std::uint16_t> scratch_ids_;
  std::vector<std::uint8_t> scratch_known_, scratch_values_;
  std::vector<std::uint64_t> scratch_words_;  // a full record's bitmap and words
};

std::uint64_t IndexPartBuilder::WriteRegisterRecord(const RegisterFile& regs) {
  const std::uint64_t offset = sink_.size();
  const std::uint32_t count = EncodeFullRecordStorage(regs.raw_storage(), scratch_words_);
  sink_.WriteRecord(RegisterRecordHeader{kFullRecord, count, 0});
  sink_.WriteRecords<std::uint64_t>(scratch_words_);
  sink_.WriteRecords<std::uint64_t>(regs.raw_known());
  return offset;
}

// A delta from the thread's previous record, or a full record every
// kMaxDeltaChain + 1 records (bounding the restore chain).
void IndexPartBuilder::WriteThreadRecord(ThreadState& t) {
  if (t.chain >= kMaxDeltaChain) {
    t.record = WriteRegisterRecord(t.regs);
    t.chain = 0;
    t.recorded = t.regs;
    return;
  }
  std::vector<std::uint16_t>& ids = scratch_ids_;
  std::vector<std::uint8_t>& known = scratch_known_;
  std::vector<std::uint8_t>& values = scratch_values_;
  ids.clear(), known.clear(), values.clear();
  for (std::size_t i = 0; i < arch_.register_count(); ++i) {
    const auto id = static_cast<RegisterId>(i);
    if (arch_.info(id).derived) continue;
    const bool k = t.regs.known(id);
    const auto now = t.regs.bytes(id);
    if (k == t.recorded.known(id) &&
        std::equal(now.begin(), now.end(), t.recorded.bytes(id).begin())) {
      continue;
    }
    ids.push_back(id);
    known.push_back(k);
    if (k) values.insert(values.end(), now.begin(), now.end());
  }
  const std::uint64_t offset = sink_.size();
  sink_.WriteRecord(
      RegisterRecordHeader{kDeltaRecord, static_cast<std::uint32_t>(ids.size()), t.record});
  sink_.WriteRecords<std::uint16_t>(ids);
  sink_.Write(known);
  sink_.Write(values);
  sink_.Pad8();
  t.record = offset;
  ++t.chain;
  t.recorded = t.regs;
}

std::size_t IndexPartBuilder::LookUpThread(ThreadId tid, std::uint64_t event) {
  auto [it, inserted] = thread_index_.try_emplace(tid.value, threads_.size());
  if (inserted) {
    auto t = std::make_unique<ThreadState>(tid, arch_);
    if (!unknown_record_) unknown_record_ = WriteRegisterRecord(t->regs);
    t->record = *unknown_record_;
    t->out = {tid.value, kNoEvent, *unknown_record_, 0, 0, 0};
    threads_.push_back(std::move(t));
  }
  ThreadState& t = *threads_[it->second];
  if (t.out.first_event == kNoEvent) t.out.first_event = event;
  if (event != kNoEvent) has_last_ = true, last_tid_ = tid.value, last_index_ = it->second;
  return it->second;
}

void IndexPartBuilder::Keyframe() {
  std::vector<RefRecord> refs;
  refs.reserve(threads_.size());
  for (std::size_t i = 0; i < threads_.size(); ++i) {
    ThreadState& t = *threads_[i];
    if (t.dirty) {
      WriteThreadRecord(t);
      t.dirty = false;
    }
    refs.push_back({i, t.record});
  }
  const ReaderPosition pos = reader_.Tell();
  keyframes_.push_back({pos.offset, pos.aux, sink_.size(), refs.size()});
  sink_.WriteRecords<RefRecord>(refs);
}

std::uint64_t IndexPartBuilder::Pc(const RegisterFile& regs) const {
  if (!pc_is_u64_) return regs.u64(arch_.pc());
  std::uint64_t pc;
  std::memcpy(&pc, regs.raw_storage().data() + pc_offset_, sizeof(pc));
  return pc;
}

// The offset as an unsigned difference of addresses: data before the source
// wraps to an offset past its end, so one comparison each way suffices (and
// an empty source takes no data of kMinReferencedLength bytes).
std::optional<std::uint64_t> IndexPartBuilder::RefOffset(const std::uint8_t* data,
                                                         std::size_t length) const {
  const std::uint64_t offset =
      reinterpret_cast<std::uintptr_t>(data) - reinterpret_cast<std::uintptr_t>(source_.data());
  if (length < kMinReferencedLength || offset > source_.size() ||
      length > source_.size() - offset) {
    return std::nullopt;
  }
  return offset;
}

void IndexPartBuilder::AddPieces(AccessListBuilder& list, std::uint64_t event,
                                 const MemoryAccess& access, bool is_read,
                                 std::size_t write_index) {
  const std::uint64_t total = access.data.size();
  for (std::uint64_t done = 0; done < total;) {
    const Address a = access.address + done;
    const std::uint64_t page = a >> kPageBits;
    const std::uint32_t offset = static_cast<std::uint32_t>(a & (kPageSize - 1));
    const std::uint64_t n = std::min<std::uint64_t>(total - done, kPageSize - offset);
    auto piece = access.data.subspan(done, n);
    AddPiece(list, event, page, offset, piece, done, total, is_read, write_index);
    if (infers_values_) {
      if (is_read) {
        tracker_.Read(page, offset, static_cast<std::uint32_t>(n),
                      [&](std::uint32_t start, std::uint32_t length) {
                        auto run = piece.subspan(start - offset, length);
                        inferred_.Add(event, page, start, run, RefOffset(run.data(), length), 0,
                                      length);
                      });
      } else {
        tracker_.Write(page, offset, static_cast<std::uint32_t>(n));
      }
    }
    done += n;
  }
}

void IndexPartBuilder::IndexEvent(const Event& e, std::uint64_t event) {
  const std::size_t index = ThreadIndex(e.thread, event);
  ThreadState& t = *threads_[index];
  if (runs_.empty() || runs_.back().thread_index != index) {
    t.runs.push_back(runs_.size());
    runs_.push_back({event, index});
  }
  if ((e.kind == EventKind::kInstruction || e.kind == EventKind::kFrame) &&
      t.regs.known(arch_.pc())) {
    pcs_.Add(Pc(t.regs), event);
  }
  for (const MemoryAccess& r : e.reads) AddAccess(reads_, event, r, true);
  if (e.flags & kEventClearsMemory) {
    memory_clears_.push_back(event);
    writes_.ClearMemory(event);
    tracker_.ClearMemory();
  }
  if (e.flags & kEventClearsRegisters) {
    t.regs.Clear();
    register_clears_.push_back({event, index});
    t.dirty = true;
  }
  for (const RegisterWrite& w : e.registers) t.regs.Apply(w);
  if (!e.registers.empty()) t.dirty = true;
  for (std::size_t i = 0; i < e.writes.size(); ++i)
    AddAccess(writes_, event, e.writes[i], false, i);
  if (e.description.empty()) return;  // no notes (ClassifyNotes), and no call per event
  const IndexedNotes notes = ClassifyNotes(e.kind, e.description);
  if (notes.plain_syscall) {
    plain_syscalls_.Add({event, e.thread, *notes.plain_syscall});
  } else if (notes.noted) {
    notes_.push_back({event, e.thread.value, static_cast<std::uint32_t>(e.kind),
                      static_cast<std::uint32_t>(e.description.size()), note_text_.size()});
    note_text_ += e.description;
  }
}

// A pass from event 0 knows every page's history (parts that start later
// only know it for pages cleared or carried since their start).
void IndexPartBuilder::StartSegment(std::uint64_t first) {
  segment_first_ = first;
  const bool complete = plan_.first_event == 0;
  writes_.StartSegment(first, complete);
  reads_.StartSegment(first, complete);
  inferred_.StartSegment(first, complete);
}

void IndexPartBuilder::FlushSegment(std::uint64_t end, bool last) {
  SegmentRecord seg{};
  seg.first_event = segment_first_;
  seg.end_event = end;
  std::tie(seg.pcs_offset, seg.pc_count) = pcs_.Flush(sink_);
  seg.lists[kWriteList] = writes_.Flush(sink_, !last);
  seg.lists[kReadList] = reads_.Flush(sink_, false);
  seg.lists[kInferredList] = inferred_.Flush(sink_, false);
  segments_.push_back(seg);
  StartSegment(end);
}

void IndexPartBuilder::Finish(std::uint64_t events, IndexTables* out) {
  out->threads.clear();
  out->threads.reserve(threads_.size());
  for (auto& t : threads_) {
    out->threads.push_back({t->tid, std::move(t->regs), t->out, std::move(t->runs)});
  }
  out->runs = std::move(runs_);
  out->keyframes = std::move(keyframes_);
  out->memory_clears = std::move(memory_clears_);
  out->register_clears = std::move(register_clears_);
  out->segments = std::move(segments_);
  out->notes = std::move(notes_);
  out->note_text = std::move(note_text_);
  out->plain_syscalls = std::move(plain_syscalls_);
  out->end_event = events;
  out->end_position = reader_.Tell();
  out->records_reads = records_reads_;
  // Only a part that stops before the end has a part after it to merge.
  if (records_reads_ && plan_.stop_event != kNoEvent) out->known_at_end = tracker_.TakeKnown();
}

Status IndexPartBuilder::Run(IndexTables* out) {
  records_reads_ = reader_.header().records_reads;
  infers_values_ = records_reads_ && reader_.header().read_values;
  if (records_reads_ && !reader_.header().read_values) reads_.set_without_data();
  const std::uint64_t interval = plan_.keyframe_interval;
  for (auto& [tid, regs] : plan_.seed) {
    const std::size_t i = ThreadIndex(tid, kNoEvent);
    ThreadState& t = *threads_[i];
    t.regs = t.recorded = regs;
    t.record = WriteRegisterRecord(regs);
    if (plan_.seed_is_initial) t.out.initial_record = t.record, t.out.flags = 1;
  }
  // Carried page states (8 KiB each) take at most a quarter of the budget
  // (they count in it: more would make segments shorter).
  writes_.set_carry_budget(plan_.memory_budget / 4);
  StartSegment(plan_.first_event);
  Event event;
  std::uint64_t n = plan_.first_event;
  // Keyframes at the multiples of the interval, counted rather than
  // divided for (a 64-bit division per event is a visible share of the loop).
  std::uint64_t next_keyframe = (n + interval - 1) / interval * interval;
  for (; n != plan_.stop_event; ++n) {
    if (n == next_keyframe) {
      Keyframe();
      next_keyframe += interval;
    }
    if (plan_.event_refs) event_position_ = reader_.Tell();
    Expected<bool> more = reader_.Next(&event);
    if (!more.ok()) {
      return more.status().Annotate("indexing " + reader_.source().name() + " at event " +
                                    std::to_string(n));
    }
    if (!*more) break;
    IndexEvent(event, n);
    if (pcs_.memory_bytes() + writes_.memory_bytes() + reads_.memory_bytes() +
            inferred_.memory_bytes() >
        plan_.memory_budget) {
      FlushSegment(n + 1, false);
    }
    if ((n + 1) % kProgressEvery == 0) {
      BACKSTEP_RETURN_IF_ERROR(sink_.status());
      if (plan_.progress && !plan_.progress(n + 1)) {
        return Status::Interrupted("indexing " + reader_.source().name() + ": cancelled at event " +
                                   std::to_string(n + 1));
      }
    }
  }
  if (segment_first_ < n) FlushSegment(n, plan_.stop_event == kNoEvent);
  Finish(n, out);
  return sink_.status();
}

}  // namespace

Status BuildIndexPart(TraceReader& reader, const IndexPartPlan& plan, IndexSink& sink,
                      IndexTables* out) {
  return IndexPartBuilder(reader, plan, sink).Run(out);
}

}  // namespace backstep::core
