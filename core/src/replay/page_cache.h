// PageCache: up to kPages native 4 KiB pages of memory at one trace position,
// least recently used out, for ReplayCursor (replay_cursor.h).
//
// A page holds kPageSize values then kPageSize known flags. The cache only
// stores: the cursor fills a claimed page (from the index, brought forward
// through its UndoJournal), patches pages with the writes of the events it
// steps over and drops them all when its position jumps or memory is
// cleared. Which pages deserve a place is the second-read rule
// (ShouldCache): a page read once since the last Drop() is remembered
// (8 at most, a ring) and cached on its next read, so that a single read
// after a jump costs no more than an index lookup.
//
// Thread-safety: none (one cursor, one thread).
#pragma once

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "backstep/core/types.h"
#include "index/index_format.h"

namespace backstep::core {

class PageCache {
 public:
  static constexpr std::size_t kPages = 16;

  struct Page {
    Address base = 0;
    std::uint64_t used = 0;  // LRU clock
    bool valid = false;
    std::vector<std::uint8_t> bytes;  // kPageSize values, then kPageSize known flags

    std::uint8_t* values() { return bytes.data(); }
    std::uint8_t* known() { return bytes.data() + kPageSize; }
  };

  PageCache() { pages_.reserve(kPages); }

  // The valid page at `base`, nullptr if not cached.
  Page* Find(Address base) {
    for (Page& page : pages_) {
      if (page.valid && page.base == base) return &page;
    }
    return nullptr;
  }
  // True when page `base` is cached or was read once since the last Drop()
  // (read it through the cache); otherwise remembers this read and returns
  // false.
  bool ShouldCache(Address base) {
    const auto missed_end = missed_.begin() + std::min(missed_count_, missed_.size());
    if (Find(base) != nullptr || std::find(missed_.begin(), missed_end, base) != missed_end) {
      return true;
    }
    missed_[missed_count_++ % missed_.size()] = base;
    return false;
  }
  // Marks `page` as used now.
  void Touch(Page* page) { page->used = ++clock_; }
  // A page to fill for a new base: a free slot, an invalid page or the least
  // recently used one. Its contents are the caller's until Commit().
  Page* Claim();
  // Makes the filled `page` the valid page at `base`.
  void Commit(Page* page, Address base) {
    page->base = base;
    page->valid = true;
    Touch(page);
  }
  // Forgets every page and every remembered first read.
  void Drop() {
    for (Page& page : pages_) page.valid = false;
    missed_count_ = 0;
  }

 private:
  std::vector<Page> pages_;
  std::uint64_t clock_ = 0;
  // Pages read once since the last Drop(), not cached (ring).
  std::array<Address, 8> missed_{};
  std::size_t missed_count_ = 0;
};

}  // namespace backstep::core
