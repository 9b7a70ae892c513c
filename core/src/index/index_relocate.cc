#include "index/index_relocate.h"

#include <algorithm>
#include <string>
#include <vector>

namespace backstep::core {
namespace {

class Relocator {
 public:
  Relocator(std::span<std::uint8_t> body, std::uint64_t base) : body_(body), base_(base) {}

  // Checks that [offset, offset + count * size) lies in the body.
  bool Inside(std::uint64_t offset, std::uint64_t count, std::uint64_t size) const {
    return offset <= body_.size() && count <= (body_.size() - offset) / size;
  }
  template <class T>
  T Load(std::uint64_t offset) const {
    return LoadRecord<T>(body_.data() + offset);
  }
  template <class T>
  void Store(std::uint64_t offset, const T& v) {
    std::memcpy(body_.data() + offset, &v, sizeof(T));
  }
  std::uint64_t Moved(std::uint64_t offset) const { return offset + base_; }
  Status Bad(const std::string& what, std::uint64_t offset) const {
    return Status::Corruption("index part: " + what + " at part offset " + std::to_string(offset) +
                              " lies outside the part (" + std::to_string(body_.size()) +
                              " bytes)");
  }

  // Entries hold no file offsets (index_format.h): only the group records'
  // entries_offset moves.
  Status Pcs(std::uint64_t offset, std::uint64_t count) {
    const std::uint64_t groups = count / kPcsPerGroup + (count % kPcsPerGroup != 0);
    if (!Inside(offset, groups, sizeof(PcGroupRecord))) return Bad("pc groups", offset);
    for (std::uint64_t i = 0; i < groups; ++i) {
      const std::uint64_t at = offset + i * sizeof(PcGroupRecord);
      PcGroupRecord g = Load<PcGroupRecord>(at);
      g.entries_offset = Moved(g.entries_offset);
      Store(at, g);
    }
    return Status::Ok();
  }

  Status Pages(std::uint64_t offset, std::uint64_t count) {
    if (!Inside(offset, count, sizeof(PageRecord))) return Bad("page records", offset);
    for (std::uint64_t i = 0; i < count; ++i) {
      const std::uint64_t at = offset + i * sizeof(PageRecord);
      PageRecord p = Load<PageRecord>(at);
      if (!Inside(p.blocks_offset, p.block_count, sizeof(BlockRecord))) {
        return Bad("block records", p.blocks_offset);
      }
      if (!Inside(p.snapshots_offset, p.snapshot_count, sizeof(SnapshotRecord))) {
        return Bad("snapshot records", p.snapshots_offset);
      }
      for (std::uint64_t b = 0; b < p.block_count; ++b) {
        const std::uint64_t block_at = p.blocks_offset + b * sizeof(BlockRecord);
        BlockRecord block = Load<BlockRecord>(block_at);
        block.data_offset = Moved(block.data_offset);
        Store(block_at, block);
      }
      for (std::uint64_t s = 0; s < p.snapshot_count; ++s) {
        const std::uint64_t snap_at = p.snapshots_offset + s * sizeof(SnapshotRecord);
        SnapshotRecord snap = Load<SnapshotRecord>(snap_at);
        snap.data_offset = Moved(snap.data_offset);
        Store(snap_at, snap);
      }
      p.blocks_offset = Moved(p.blocks_offset);
      p.snapshots_offset = Moved(p.snapshots_offset);
      Store(at, p);
    }
    return Status::Ok();
  }

  // A keyframe's ref array: records first seen get their `prev` moved (a
  // record is referenced by consecutive keyframes of its thread, so
  // "different from the thread's previous ref" means "first seen").
  Status Refs(KeyframeRecord& kf, std::span<const std::uint64_t> thread_map,
              std::vector<std::uint64_t>& last_seen) {
    if (!Inside(kf.refs_offset, kf.ref_count, sizeof(RefRecord))) {
      return Bad("keyframe refs", kf.refs_offset);
    }
    std::vector<RefRecord> refs(kf.ref_count);
    for (std::uint64_t i = 0; i < kf.ref_count; ++i) {
      RefRecord r = Load<RefRecord>(kf.refs_offset + i * sizeof(RefRecord));
      if (r.thread_index >= thread_map.size()) return Bad("keyframe thread", kf.refs_offset);
      if (r.record_offset != last_seen[r.thread_index]) {
        last_seen[r.thread_index] = r.record_offset;
        BACKSTEP_RETURN_IF_ERROR(Record(r.record_offset));
      }
      refs[i] = {thread_map[r.thread_index], Moved(r.record_offset)};
    }
    std::sort(refs.begin(), refs.end(), [](const RefRecord& a, const RefRecord& b) {
      return a.thread_index < b.thread_index;
    });
    for (std::uint64_t i = 0; i < kf.ref_count; ++i) {
      Store(kf.refs_offset + i * sizeof(RefRecord), refs[i]);
    }
    kf.refs_offset = Moved(kf.refs_offset);
    return Status::Ok();
  }

  Status Record(std::uint64_t offset) {
    if (!Inside(offset, 1, sizeof(RegisterRecordHeader))) return Bad("register record", offset);
    RegisterRecordHeader h = Load<RegisterRecordHeader>(offset);
    if (h.kind != kDeltaRecord) return Status::Ok();
    if (h.prev >= offset) return Bad("delta register record's previous record", h.prev);
    h.prev = Moved(h.prev);
    Store(offset, h);
    return Status::Ok();
  }

 private:
  std::span<std::uint8_t> body_;
  std::uint64_t base_;
};

}  // namespace

Status RelocatePart(std::span<std::uint8_t> body, std::uint64_t base,
                    std::span<const std::uint64_t> thread_map, IndexTables* tables) {
  if (thread_map.size() != tables->threads.size()) {
    return Status::Corruption("index part: thread map of " + std::to_string(thread_map.size()) +
                              " threads for a part of " + std::to_string(tables->threads.size()));
  }
  Relocator r(body, base);
  std::vector<std::uint64_t> last_seen(thread_map.size(), kNoEvent);
  for (KeyframeRecord& kf : tables->keyframes) {
    BACKSTEP_RETURN_IF_ERROR(r.Refs(kf, thread_map, last_seen));
  }
  for (SegmentRecord& seg : tables->segments) {
    BACKSTEP_RETURN_IF_ERROR(r.Pcs(seg.pcs_offset, seg.pc_count));
    seg.pcs_offset = r.Moved(seg.pcs_offset);
    for (ListRecord& list : seg.lists) {
      BACKSTEP_RETURN_IF_ERROR(r.Pages(list.pages_offset, list.page_count));
      list.pages_offset = r.Moved(list.pages_offset);
    }
  }
  for (IndexTables::Thread& t : tables->threads) {
    t.out.initial_record = r.Moved(t.out.initial_record);
  }
  for (RegisterClearRecord& c : tables->register_clears)
    c.thread_index = thread_map[c.thread_index];
  return Status::Ok();
}

}  // namespace backstep::core
