// AccessListBuilder: builds one access list (writes, reads or inferred
// values) of one index segment, page by page, in memory.
//
// Entries arrive in event order, already split at page boundaries. Each page
// keeps its encoded entries (index_format.h) in blocks of `block_entries`,
// with a directory of BlockRecords. For the write list, every
// `snapshot_blocks` blocks a page snapshot (write-state of the page within
// the segment since the last clear: mask + values) is taken, so that a value
// query decodes at most snapshot_blocks * block_entries entries. The state
// behind snapshots is only kept for hot pages: it is computed from the
// page's buffered entries when the page takes its first snapshot.
//
// Memory: the encoded entries (about 3 bytes + data per entry), 32 bytes per
// block, 4.6 KiB per snapshot and 8 KiB of state per hot page, until Flush().
//
// Thread-safety: one thread at a time.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <unordered_map>
#include <vector>

#include "index/index_format.h"
#include "index/index_sink.h"

namespace backstep::core {

class AccessListBuilder {
 public:
  // `trace_bytes` resolves referenced data (the reader's whole source).
  AccessListBuilder(std::uint32_t block_entries, std::uint32_t snapshot_blocks, bool snapshots,
                    std::span<const std::uint8_t> trace_bytes);

  // One page piece of an access by `event`. `data` is the piece's bytes;
  // `ref_offset` its offset in the trace file when it is to be referenced
  // instead of copied. `piece_offset`/`access_length` locate the piece in the
  // whole access (0 and data.size() for an access inside one page).
  void Add(std::uint64_t event, std::uint64_t page, std::uint32_t offset,
           std::span<const std::uint8_t> data, std::optional<std::uint64_t> ref_offset,
           std::uint64_t piece_offset, std::uint64_t access_length);
  // All memory becomes unknown before the writes of `event`.
  void ClearMemory(std::uint64_t event);

  std::uint64_t memory_bytes() const { return memory_bytes_; }
  bool empty() const { return pages_.empty(); }
  // Writes the pages (entries, blocks, snapshots, page records) and returns
  // their ListRecord; the builder is then empty.
  ListRecord Flush(IndexSink& sink);

 private:
  struct PageState {
    std::uint8_t values[kPageSize];
    std::uint8_t known[kPageSize];
    std::uint64_t epoch;
  };
  struct Page {
    std::vector<std::uint8_t> data;
    std::vector<BlockRecord> blocks;  // data_offset relative to `data`
    std::uint64_t last_event = 0;
    std::uint64_t last_ref = 0;             // last referenced trace offset of the current block
    std::vector<SnapshotRecord> snapshots;  // data_offset relative to `snapshot_data`
    std::vector<std::uint8_t> snapshot_data;
    std::unique_ptr<PageState> state;  // hot pages only
  };

  void OpenBlock(Page& page, std::uint64_t event);
  void TakeSnapshot(Page& page);
  void Rebuild(Page& page, PageState& state) const;
  void ApplyToState(PageState& state, std::uint32_t offset, std::span<const std::uint8_t> data);

  std::uint32_t block_entries_, snapshot_blocks_;
  bool snapshots_;
  std::span<const std::uint8_t> trace_bytes_;
  std::uint64_t epoch_ = 0;       // number of memory clears so far
  std::uint64_t last_clear_ = 0;  // event of the last clear (0 if none)
  std::unordered_map<std::uint64_t, Page> pages_;
  Page* last_page_ = nullptr;  // pages_[last_page_number_] (nodes are stable)
  std::uint64_t last_page_number_ = 0;
  std::uint64_t memory_bytes_ = 0;
};

}  // namespace backstep::core
