#include "replay/page_cache.h"

namespace backstep::core {

PageCache::Page* PageCache::Claim() {
  if (pages_.size() < kPages) {
    Page* page = &pages_.emplace_back();
    page->bytes.resize(2 * kPageSize);
    return page;
  }
  Page* slot = &pages_.front();
  for (Page& page : pages_) {
    if (!page.valid) return &page;
    if (page.used < slot->used) slot = &page;
  }
  return slot;
}

}  // namespace backstep::core
