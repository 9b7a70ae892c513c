#include "index/trace_index.h"

#include <algorithm>
#include <array>
#include <cassert>
#include <cstring>
#include <vector>

#include "index/full_register_record.h"
#include "util/hex.h"

namespace backstep::core {
namespace {

template <class Fn>
std::uint64_t PartitionPoint(std::uint64_t n, Fn&& pred) {
  // First i in [0, n) with !pred(i) (pred true then false).
  std::uint64_t lo = 0, hi = n;
  while (lo < hi) {
    const std::uint64_t mid = lo + (hi - lo) / 2;
    if (pred(mid)) {
      lo = mid + 1;
    } else {
      hi = mid;
    }
  }
  return lo;
}

}  // namespace

std::string ValidateIndex(std::span<const std::uint8_t> bytes, const IndexIdentity& identity,
                          const std::function<void(std::span<const std::uint8_t>)>& after_chunk) {
  if (bytes.size() < kHeaderSize + kFooterSize) return "truncated";
  const auto header = LoadRecord<IndexHeader>(bytes.data());
  if (std::memcmp(header.magic, kIndexMagic, 8) != 0) return "corrupt: bad magic";
  if (header.version != kIndexVersion || header.header_size != kHeaderSize) {
    return "stale: index format " + std::to_string(header.version) + ", this backstep writes " +
           std::to_string(kIndexVersion);
  }
  const auto footer = LoadRecord<IndexFooter>(bytes.data() + bytes.size() - kFooterSize);
  if (std::memcmp(footer.magic, kFooterMagic, 8) != 0 || footer.file_size > bytes.size()) {
    return "truncated";
  }
  if (footer.file_size != bytes.size() || footer.directory_offset < kHeaderSize ||
      footer.directory_offset > bytes.size() ||
      footer.directory_size != bytes.size() - kFooterSize - footer.directory_offset) {
    return "corrupt: bad footer";
  }
  if (header.arch_signature != identity.arch_signature) return "stale: register layout changed";
  const std::string_view format(header.format, strnlen(header.format, sizeof(header.format)));
  if (header.trace_size != identity.trace_size ||
      header.trace_mtime_ns != identity.trace_mtime_ns ||
      header.trace_hash != identity.trace_hash || format != identity.format) {
    return "stale: trace modified";
  }
  if (header.keyframe_interval != identity.keyframe_interval) {
    return "stale: keyframe interval changed";
  }
  Hash64 hash;
  constexpr std::size_t kChunk = 16 << 20;  // a multiple of every page size
  const auto body = bytes.first(bytes.size() - kFooterSize);
  for (std::size_t at = 0; at < body.size(); at += kChunk) {
    const auto chunk = body.subspan(at, std::min(kChunk, body.size() - at));
    hash.Update(chunk);
    if (after_chunk) after_chunk(chunk);
  }
  hash.Update(bytes.subspan(bytes.size() - kFooterSize, 24));
  if (hash.Digest() != footer.checksum) return "corrupt: checksum mismatch";
  return "";
}

Expected<std::unique_ptr<TraceIndex>> TraceIndex::Open(std::shared_ptr<const void> owner,
                                                       std::span<const std::uint8_t> bytes,
                                                       std::span<const std::uint8_t> trace_bytes) {
  std::unique_ptr<TraceIndex> index(new TraceIndex());
  index->owner_ = std::move(owner);
  index->bytes_ = bytes;
  index->trace_bytes_ = trace_bytes;
  BACKSTEP_RETURN_IF_ERROR(index->Parse());
  return index;
}

Status TraceIndex::Parse() {
  const auto footer = LoadRecord<IndexFooter>(bytes_.data() + bytes_.size() - kFooterSize);
  const auto header = LoadRecord<IndexHeader>(bytes_.data());
  interval_ = header.keyframe_interval;
  auto corrupt = [&](const std::string& what) {
    return Status::Corruption("index at offset " + HexU64(footer.directory_offset) + ": " + what);
  };
  if (footer.directory_size < sizeof(IndexDirectory) || interval_ == 0) {
    return corrupt("bad directory");
  }
  dir_ = LoadRecord<IndexDirectory>(bytes_.data() + footer.directory_offset);
  const std::uint8_t* p = bytes_.data() + footer.directory_offset + sizeof(IndexDirectory);
  std::uint64_t need = sizeof(IndexDirectory);
  bool overflow = false;
  auto take = [&](std::uint64_t count, std::uint64_t size) -> const std::uint8_t* {
    const std::uint8_t* at = p;
    if (overflow || count > (footer.directory_size - need) / size) {
      overflow = true;
      return at;
    }
    need += count * size;
    p += count * size;
    return at;
  };
  threads_ = take(dir_.thread_count, sizeof(ThreadRecord));
  runs_ = take(dir_.run_count, sizeof(RunRecord));
  keyframes_ = take(dir_.keyframe_count, sizeof(KeyframeRecord));
  memory_clears_ = take(dir_.memory_clear_count, 8);
  register_clears_ = take(dir_.register_clear_count, sizeof(RegisterClearRecord));
  segments_ = take(dir_.segment_count, sizeof(SegmentRecord));
  notes_ = take(dir_.note_count, sizeof(NoteRecord));
  note_text_ = take(dir_.note_text_size, 1);
  take(Align8(dir_.note_text_size) - dir_.note_text_size, 1);  // padding (skipped on overflow)
  const std::uint64_t syscall_blocks = dir_.plain_syscall_count / kPlainSyscallsPerBlock +
                                       (dir_.plain_syscall_count % kPlainSyscallsPerBlock != 0);
  plain_skips_ = take(syscall_blocks, sizeof(SyscallSkipRecord));
  plain_stream_ = take(dir_.plain_syscall_stream_size, 1);
  take(Align8(dir_.plain_syscall_stream_size) - dir_.plain_syscall_stream_size, 1);
  if (overflow || need != footer.directory_size) return corrupt("directory size mismatch");
  if (dir_.block_entries == 0 || dir_.snapshot_blocks == 0 || dir_.register_known_words > 64 ||
      dir_.register_storage_size > kMaxRegisterStorageSize ||
      dir_.keyframe_count != dir_.event_count / interval_ + 1) {
    return corrupt("bad directory fields");
  }
  // Arrays are checked as (offset, count, record size): count * size may
  // not be computed first, a crafted count makes it wrap.
  auto in_file = [&](std::uint64_t offset, std::uint64_t size) { return InFile(offset, 1, size); };
  for (std::uint64_t i = 0; i < dir_.thread_count; ++i) {
    const ThreadRecord t = thread(i);
    // A record's body is checked where RestoreRecord follows it.
    if (!in_file(t.initial_record, sizeof(RegisterRecordHeader)) ||
        !InFile(t.runs_offset, t.run_count, 8)) {
      return corrupt("bad thread record");
    }
    thread_ids_.emplace_back(t.tid, i);
  }
  std::sort(thread_ids_.begin(), thread_ids_.end());
  for (std::uint64_t k = 0; k < dir_.keyframe_count; ++k) {
    const auto kf = Rec<KeyframeRecord>(keyframes_, k);
    if (kf.ref_count > dir_.thread_count || !InFile(kf.refs_offset, kf.ref_count, 16)) {
      return corrupt("bad keyframe " + std::to_string(k));
    }
    for (std::uint64_t r = 0; r < kf.ref_count; ++r) {
      const auto ref = Rec<RefRecord>(bytes_.data() + kf.refs_offset, r);
      if (ref.thread_index != r || !in_file(ref.record_offset, sizeof(RegisterRecordHeader))) {
        return corrupt("bad keyframe " + std::to_string(k));
      }
    }
  }
  for (std::uint64_t s = 0; s < dir_.segment_count; ++s) {
    const SegmentRecord seg = segment(s);
    bool ok =
        seg.first_event < seg.end_event && seg.end_event <= dir_.event_count &&
        InFile(seg.pcs_offset, seg.pc_count / kPcsPerGroup + (seg.pc_count % kPcsPerGroup != 0),
               sizeof(PcGroupRecord));
    for (const ListRecord& l : seg.lists) {
      ok = ok && InFile(l.pages_offset, l.page_count, sizeof(PageRecord));
    }
    if (!ok) return corrupt("bad segment " + std::to_string(s));
    BACKSTEP_RETURN_IF_ERROR(CheckSegmentData(s));
  }
  BACKSTEP_RETURN_IF_ERROR(CheckNotes());
  BACKSTEP_RETURN_IF_ERROR(CheckPlainSyscalls());
  return CheckThreadsAndRuns();
}

std::optional<std::size_t> TraceIndex::ThreadIndexOf(ThreadId tid) const {
  auto it = std::lower_bound(thread_ids_.begin(), thread_ids_.end(),
                             std::make_pair(tid.value, std::size_t(0)));
  if (it == thread_ids_.end() || it->first != tid.value) return std::nullopt;
  return it->second;
}

std::size_t TraceIndex::ThreadIndexAt(std::uint64_t event) const {
  assert(event < dir_.event_count && dir_.run_count > 0);
  const std::uint64_t i = PartitionPoint(dir_.run_count, [&](std::uint64_t r) {
    return Rec<RunRecord>(runs_, r).first_event <= event;
  });
  return Rec<RunRecord>(runs_, i - 1).thread_index;
}

std::optional<std::uint64_t> TraceIndex::NextEventOfThread(std::size_t thread_index,
                                                           std::uint64_t from) const {
  const ThreadRecord t = thread(thread_index);
  const std::uint8_t* list = bytes_.data() + t.runs_offset;
  auto run_first = [&](std::uint64_t j) {
    return Rec<RunRecord>(runs_, LoadRecord<std::uint64_t>(list + 8 * j)).first_event;
  };
  // j: the thread's first run starting after `from`.
  const std::uint64_t j =
      PartitionPoint(t.run_count, [&](std::uint64_t x) { return run_first(x) <= from; });
  if (j > 0) {
    const std::uint64_t run = LoadRecord<std::uint64_t>(list + 8 * (j - 1));
    const std::uint64_t run_end =
        run + 1 < dir_.run_count ? Rec<RunRecord>(runs_, run + 1).first_event : dir_.event_count;
    if (from < run_end) return from;
  }
  if (j < t.run_count) return run_first(j);
  return std::nullopt;
}

std::optional<std::uint64_t> TraceIndex::PrevEventOfThread(std::size_t thread_index,
                                                           std::uint64_t before) const {
  const ThreadRecord t = thread(thread_index);
  const std::uint8_t* list = bytes_.data() + t.runs_offset;
  const std::uint64_t j = PartitionPoint(t.run_count, [&](std::uint64_t x) {
    return Rec<RunRecord>(runs_, LoadRecord<std::uint64_t>(list + 8 * x)).first_event < before;
  });
  if (j == 0) return std::nullopt;
  const std::uint64_t run = LoadRecord<std::uint64_t>(list + 8 * (j - 1));
  const std::uint64_t run_end =
      run + 1 < dir_.run_count ? Rec<RunRecord>(runs_, run + 1).first_event : dir_.event_count;
  return std::min(run_end, before) - 1;
}

ReaderPosition TraceIndex::KeyframeReaderPosition(std::uint64_t k) const {
  const auto kf = Rec<KeyframeRecord>(keyframes_, k);
  return {kf.reader_offset, kf.reader_aux};
}

void TraceIndex::RestoreRecord(std::uint64_t offset, RegisterFile& file) const {
  // Walk back to the full record, then apply the deltas forward. Offsets
  // and counts are checked against the file as they are followed (Parse
  // checks only where chains start): a record that does not fit leaves the
  // registers unknown.
  std::array<std::uint64_t, kMaxDeltaChain + 1> chain;
  std::size_t n = 0;
  // The directory's record layout must be the file's (a crafted directory
  // could claim more storage than the registers have).
  if (dir_.register_storage_size != file.raw_storage().size() ||
      dir_.register_known_words != file.raw_known().size()) {
    return file.Clear();
  }
  RegisterRecordHeader full_header{};
  for (;;) {
    if (!InFile(offset, 1, sizeof(RegisterRecordHeader))) return file.Clear();
    const auto h = LoadRecord<RegisterRecordHeader>(bytes_.data() + offset);
    chain[n++] = offset;
    if (h.kind == kFullRecord) {
      full_header = h;
      break;
    }
    if (n == chain.size() || !InFile(offset + sizeof(RegisterRecordHeader), h.count, 3)) {
      return file.Clear();
    }
    offset = h.prev;
  }
  const std::uint8_t* full = bytes_.data() + chain[n - 1] + sizeof(RegisterRecordHeader);
  const std::uint8_t* file_end = bytes_.data() + bytes_.size() - kFooterSize;
  // The storage is expanded on the stack (x86-64: 3314 bytes) unless an
  // architecture's is larger.
  std::array<std::uint64_t, 512> small_storage;
  std::vector<std::uint64_t> large_storage;
  std::uint8_t* storage = reinterpret_cast<std::uint8_t*>(small_storage.data());
  if (dir_.register_storage_size > sizeof(small_storage)) {
    large_storage.resize(Align8(dir_.register_storage_size) / 8);
    storage = reinterpret_cast<std::uint8_t*>(large_storage.data());
  }
  const std::uint8_t* known_bytes = nullptr;
  const std::size_t words = dir_.register_known_words;
  if (!DecodeFullRecordStorage(full, static_cast<std::uint64_t>(file_end - full), full_header.count,
                               words, {storage, dir_.register_storage_size}, &known_bytes)) {
    return file.Clear();
  }
  std::array<std::uint64_t, 64> known;
  std::memcpy(known.data(), known_bytes, 8 * words);
  file.Restore({storage, dir_.register_storage_size}, {known.data(), words});
  const ArchDescription& arch = file.arch();
  for (std::size_t i = n - 1; i-- > 0;) {
    const std::uint8_t* rec = bytes_.data() + chain[i];
    const auto h = LoadRecord<RegisterRecordHeader>(rec);
    const std::uint8_t* ids = rec + sizeof(RegisterRecordHeader);
    const std::uint8_t* flags = ids + 2 * h.count;
    const std::uint8_t* values = flags + h.count;
    for (std::uint32_t j = 0; j < h.count; ++j) {
      const auto id = LoadRecord<std::uint16_t>(ids + 2 * j);
      if (id >= arch.register_count() || arch.info(id).derived) continue;
      if (flags[j]) {
        if (arch.info(id).size > static_cast<std::size_t>(file_end - values)) return;
        file.Set(id, {values, arch.info(id).size});
        values += arch.info(id).size;
      } else {
        file.SetUnknown(id);
      }
    }
  }
}

void TraceIndex::RestoreKeyframe(std::uint64_t k, std::vector<RegisterFile>& files) const {
  assert(files.size() == dir_.thread_count);
  const auto kf = Rec<KeyframeRecord>(keyframes_, k);
  for (std::uint64_t i = 0; i < files.size(); ++i) {
    if (i >= kf.ref_count) {
      files[i].Clear();
      continue;
    }
    RestoreRecord(Rec<RefRecord>(bytes_.data() + kf.refs_offset, i).record_offset, files[i]);
  }
}

std::optional<std::uint64_t> TraceIndex::LastMemoryClearBefore(std::uint64_t p) const {
  const std::uint64_t i = PartitionPoint(dir_.memory_clear_count, [&](std::uint64_t j) {
    return LoadRecord<std::uint64_t>(memory_clears_ + 8 * j) < p;
  });
  if (i == 0) return std::nullopt;
  return LoadRecord<std::uint64_t>(memory_clears_ + 8 * (i - 1));
}

std::optional<RegisterClearRecord> TraceIndex::LastRegisterClearBefore(std::uint64_t p) const {
  // The builder appends clears in event order (parallel parts in order too).
  const std::uint64_t i = PartitionPoint(dir_.register_clear_count, [&](std::uint64_t j) {
    return Rec<RegisterClearRecord>(register_clears_, j).event < p;
  });
  if (i == 0) return std::nullopt;
  return Rec<RegisterClearRecord>(register_clears_, i - 1);
}

std::optional<std::uint64_t> TraceIndex::NextMemoryClearFrom(std::uint64_t p) const {
  const std::uint64_t i = PartitionPoint(dir_.memory_clear_count, [&](std::uint64_t j) {
    return LoadRecord<std::uint64_t>(memory_clears_ + 8 * j) < p;
  });
  if (i == dir_.memory_clear_count) return std::nullopt;
  return LoadRecord<std::uint64_t>(memory_clears_ + 8 * i);
}

std::uint64_t TraceIndex::SegmentIndexOf(std::uint64_t event) const {
  // The last segment whose first event is <= event (0 if none).
  const std::uint64_t i = PartitionPoint(
      dir_.segment_count, [&](std::uint64_t s) { return segment(s).first_event <= event; });
  return i == 0 ? 0 : i - 1;
}

}  // namespace backstep::core
