#include "index/index_builder.h"

#include <algorithm>
#include <cstring>
#include <memory>
#include <optional>
#include <unordered_map>
#include <vector>

#include "index/access_list_builder.h"
#include "index/inference_tracker.h"
#include "index/pc_index_builder.h"

namespace backstep::core {
namespace {

constexpr std::uint64_t kProgressEvery = 1 << 16;

class IndexBuilder {
 public:
  IndexBuilder(TraceReader& reader, const IndexIdentity& identity, const IndexBuildOptions& options,
               IndexSink& sink)
      : reader_(reader),
        identity_(identity),
        options_(options),
        sink_(sink),
        arch_(*reader.header().arch),
        source_(reader.source().data()),
        writes_(options.block_entries, options.snapshot_blocks, true, source_),
        reads_(options.block_entries, options.snapshot_blocks, false, source_),
        inferred_(options.block_entries, options.snapshot_blocks, false, source_),
        tracker_(reader) {}

  Status Run();

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

  void WriteHeader();
  std::uint64_t WriteRegisterRecord(const RegisterFile& regs);
  void WriteThreadRecord(ThreadState& t);
  std::size_t ThreadIndex(ThreadId tid, std::uint64_t event);
  void Keyframe();
  void IndexEvent(const Event& e, std::uint64_t event);
  void AddAccess(AccessListBuilder& list, std::uint64_t event, const MemoryAccess& access,
                 bool is_read);
  std::optional<std::uint64_t> RefOffset(const std::uint8_t* data, std::size_t length) const;
  void FlushSegment(std::uint64_t end);
  void WriteDirectory(std::uint64_t events);

  TraceReader& reader_;
  const IndexIdentity& identity_;
  const IndexBuildOptions& options_;
  IndexSink& sink_;
  const ArchDescription& arch_;
  std::span<const std::uint8_t> source_;
  PcIndexBuilder pcs_;
  AccessListBuilder writes_, reads_, inferred_;
  InferenceTracker tracker_;
  bool records_reads_ = false;

  std::vector<std::unique_ptr<ThreadState>> threads_;
  std::unordered_map<std::uint64_t, std::size_t> thread_index_;
  std::optional<std::uint64_t> unknown_record_;
  std::vector<RunRecord> runs_;
  std::vector<KeyframeRecord> keyframes_;
  std::vector<std::uint64_t> memory_clears_;
  std::vector<RegisterClearRecord> register_clears_;
  std::vector<SegmentRecord> segments_;
  std::uint64_t segment_first_ = 0;
  bool has_last_ = false;  // last_tid_ / last_index_: the previous event's thread
  std::uint64_t last_tid_ = 0;
  std::size_t last_index_ = 0;
  std::vector<std::uint16_t> scratch_ids_;
  std::vector<std::uint8_t> scratch_known_, scratch_values_;
};

void IndexBuilder::WriteHeader() {
  IndexHeader h{};
  std::memcpy(h.magic, kIndexMagic, 8);
  h.version = kIndexVersion;
  h.header_size = kHeaderSize;
  h.trace_size = identity_.trace_size;
  h.trace_mtime_ns = identity_.trace_mtime_ns;
  h.trace_hash = identity_.trace_hash;
  h.keyframe_interval = identity_.keyframe_interval;
  h.arch_signature = identity_.arch_signature;
  std::memcpy(h.format, identity_.format.data(),
              std::min(identity_.format.size(), sizeof(h.format)));
  sink_.WriteRecord(h);
}

std::uint64_t IndexBuilder::WriteRegisterRecord(const RegisterFile& regs) {
  const std::uint64_t offset = sink_.size();
  sink_.WriteRecord(RegisterRecordHeader{kFullRecord, 0, 0});
  sink_.Write(regs.raw_storage());
  sink_.Pad8();
  sink_.WriteRecords<std::uint64_t>(regs.raw_known());
  return offset;
}

// A delta from the thread's previous record, or a full record every
// kMaxDeltaChain + 1 records (bounding the restore chain).
void IndexBuilder::WriteThreadRecord(ThreadState& t) {
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

std::size_t IndexBuilder::ThreadIndex(ThreadId tid, std::uint64_t event) {
  if (has_last_ && tid.value == last_tid_) {
    ThreadState& t = *threads_[last_index_];
    if (t.out.first_event == kNoEvent) t.out.first_event = event;
    return last_index_;
  }
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

void IndexBuilder::Keyframe() {
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

std::optional<std::uint64_t> IndexBuilder::RefOffset(const std::uint8_t* data,
                                                     std::size_t length) const {
  if (length < kMinReferencedLength || source_.empty()) return std::nullopt;
  const std::uint8_t* begin = source_.data();
  if (std::less<>()(data, begin) || std::less<>()(begin + source_.size(), data + length)) {
    return std::nullopt;
  }
  return static_cast<std::uint64_t>(data - begin);
}

// Splits an access at page boundaries into `list` (and, for reads, feeds
// the inference tracker).
void IndexBuilder::AddAccess(AccessListBuilder& list, std::uint64_t event,
                             const MemoryAccess& access, bool is_read) {
  const std::uint64_t total = access.data.size();
  for (std::uint64_t done = 0; done < total;) {
    const Address a = access.address + done;
    const std::uint64_t page = a >> kPageBits;
    const std::uint32_t offset = static_cast<std::uint32_t>(a & (kPageSize - 1));
    const std::uint64_t n = std::min<std::uint64_t>(total - done, kPageSize - offset);
    auto piece = access.data.subspan(done, n);
    list.Add(event, page, offset, piece, RefOffset(piece.data(), n), done, total);
    if (records_reads_) {
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

void IndexBuilder::IndexEvent(const Event& e, std::uint64_t event) {
  const std::size_t index = ThreadIndex(e.thread, event);
  ThreadState& t = *threads_[index];
  if (runs_.empty() || runs_.back().thread_index != index) {
    t.runs.push_back(runs_.size());
    runs_.push_back({event, index});
  }
  if ((e.kind == EventKind::kInstruction || e.kind == EventKind::kFrame) &&
      t.regs.known(arch_.pc())) {
    pcs_.Add(t.regs.u64(arch_.pc()), event);
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
  for (const MemoryAccess& w : e.writes) AddAccess(writes_, event, w, false);
}

void IndexBuilder::FlushSegment(std::uint64_t end) {
  SegmentRecord seg{};
  seg.first_event = segment_first_;
  seg.end_event = end;
  std::tie(seg.pcs_offset, seg.pc_count) = pcs_.Flush(sink_);
  seg.lists[kWriteList] = writes_.Flush(sink_);
  seg.lists[kReadList] = reads_.Flush(sink_);
  seg.lists[kInferredList] = inferred_.Flush(sink_);
  segments_.push_back(seg);
  segment_first_ = end;
}

void IndexBuilder::WriteDirectory(std::uint64_t events) {
  std::vector<ThreadRecord> threads;
  for (auto& t : threads_) {
    t->out.runs_offset = sink_.size();
    t->out.run_count = t->runs.size();
    sink_.WriteRecords<std::uint64_t>(t->runs);
    threads.push_back(t->out);
  }
  IndexDirectory dir{};
  dir.event_count = events;
  dir.thread_count = threads.size();
  dir.run_count = runs_.size();
  dir.keyframe_count = keyframes_.size();
  dir.memory_clear_count = memory_clears_.size();
  dir.register_clear_count = register_clears_.size();
  dir.segment_count = segments_.size();
  RegisterFile probe(arch_);
  dir.register_storage_size = probe.raw_storage().size();
  dir.register_known_words = probe.raw_known().size();
  dir.flags = (reader_.header().address_kind == AddressKind::kPhysical ? kDirPhysical : 0) |
              (records_reads_ ? kDirRecordsReads : 0);
  dir.block_entries = options_.block_entries;
  dir.snapshot_blocks = options_.snapshot_blocks;
  const std::uint64_t dir_offset = sink_.size();
  sink_.WriteRecord(dir);
  sink_.WriteRecords<ThreadRecord>(threads);
  sink_.WriteRecords<RunRecord>(runs_);
  sink_.WriteRecords<KeyframeRecord>(keyframes_);
  sink_.WriteRecords<std::uint64_t>(memory_clears_);
  sink_.WriteRecords<RegisterClearRecord>(register_clears_);
  sink_.WriteRecords<SegmentRecord>(segments_);
  IndexFooter footer{};
  footer.directory_offset = dir_offset;
  footer.directory_size = sink_.size() - dir_offset;
  footer.file_size = sink_.size() + kFooterSize;
  std::memcpy(footer.magic, kFooterMagic, 8);
  Hash64 hash = sink_.hash();
  hash.Update({reinterpret_cast<const std::uint8_t*>(&footer), 24});
  footer.checksum = hash.Digest();
  sink_.WriteUnhashed({reinterpret_cast<const std::uint8_t*>(&footer), kFooterSize});
}

Status IndexBuilder::Run() {
  records_reads_ = reader_.header().records_reads;
  const std::uint64_t interval = identity_.keyframe_interval;
  const std::uint64_t total = reader_.header().declared_events.value_or(0);
  WriteHeader();
  for (auto& [tid, regs] : reader_.InitialRegisters()) {
    const std::size_t i = ThreadIndex(tid, kNoEvent);
    threads_[i]->regs = threads_[i]->recorded = regs;
    threads_[i]->record = threads_[i]->out.initial_record = WriteRegisterRecord(regs);
    threads_[i]->out.flags = 1;
  }
  Event event;
  std::uint64_t n = 0;
  for (;; ++n) {
    if (n % interval == 0) Keyframe();
    Expected<bool> more = reader_.Next(&event);
    if (!more.ok()) {
      return more.status().Annotate("indexing " + reader_.source().name() + " at event " +
                                    std::to_string(n));
    }
    if (!*more) break;
    IndexEvent(event, n);
    if (pcs_.memory_bytes() + writes_.memory_bytes() + reads_.memory_bytes() +
            inferred_.memory_bytes() >
        options_.memory_budget) {
      FlushSegment(n + 1);
    }
    if ((n + 1) % kProgressEvery == 0) {
      BACKSTEP_RETURN_IF_ERROR(sink_.status());
      if (options_.progress && !options_.progress("indexing", n + 1, total)) {
        return Status::Interrupted("indexing " + reader_.source().name() + ": cancelled at event " +
                                   std::to_string(n + 1));
      }
    }
  }
  if (segment_first_ < n) FlushSegment(n);
  WriteDirectory(n);
  if (options_.progress) options_.progress("indexing", n, n);
  return sink_.status();
}

}  // namespace

std::uint64_t TraceHash(std::span<const std::uint8_t> bytes) {
  constexpr std::size_t kEdge = 64 << 10;
  Hash64 h(bytes.size());
  h.Update(bytes.first(std::min(bytes.size(), kEdge)));
  h.Update(bytes.last(std::min(bytes.size(), kEdge)));
  return h.Digest();
}

std::uint64_t ArchSignature(const ArchDescription& arch) {
  Hash64 h(arch.register_count());
  h.Update({reinterpret_cast<const std::uint8_t*>(arch.name().data()), arch.name().size()});
  const std::uint64_t sizes[2] = {arch.storage_size(), RegisterFile(arch).raw_known().size()};
  h.Update({reinterpret_cast<const std::uint8_t*>(sizes), sizeof(sizes)});
  return h.Digest();
}

Status BuildIndex(TraceReader& reader, const IndexIdentity& identity,
                  const IndexBuildOptions& options, IndexSink& sink) {
  return IndexBuilder(reader, identity, options, sink).Run();
}

}  // namespace backstep::core
