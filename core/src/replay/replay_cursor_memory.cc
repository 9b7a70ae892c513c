// ReplayCursor's memory: reads at its position through the page cache
// (page_cache.h), the cache kept true as the cursor steps, and the x86 page
// walk of physical traces. The rest of the cursor is in replay_cursor.cc.
#include <algorithm>
#include <cassert>
#include <cstring>
#include <iterator>
#include <memory>
#include <optional>
#include <utility>
#include <vector>

#include "paging/x86_paging.h"
#include "replay/replay_cursor.h"

namespace backstep::core {

Status ReplayCursor::ReadMemory(Address address, std::span<std::uint8_t> out,
                                std::span<std::uint8_t> known, AddressKind kind) const {
  assert(out.size() == known.size());
  if (index_.physical() && kind == AddressKind::kVirtual) return ReadVirtual(address, out, known);
  if (!index_.physical() && kind == AddressKind::kPhysical) {
    return Status::Unsupported(trace_.path() + ": physical read in a trace of virtual addresses");
  }
  ReadCached(address, out, known);
  FollowMappings(address, out, known);
  return Status();
}

void ReplayCursor::FollowMappings(Address address, std::span<std::uint8_t> out,
                                  std::span<std::uint8_t> known) const {
  if (!describes_mappings_ || known.empty()) return;
  if (mapping_state_at_ != position_) {
    // A timeline that cannot read the events (a corrupt one) changes
    // nothing: the index's bytes are served, none guessed.
    auto state = trace_.mappings().StateAt(Position(position_));
    mapping_state_ = state.ok() ? *std::move(state) : nullptr;
    mapping_state_at_ = position_;
  }
  if (mapping_state_ == nullptr) return;
  MaskUnmapped(mapping_state_->unmapped, address, out, known);
  if (!mapping_state_->refilled.empty()) ZeroStaleBytes(address, out, known);
  // Every byte known (the common case): no mapping to look up.
  if (std::memchr(known.data(), 0, known.size()) == nullptr) return;
  FillUnfilledMappings(mapping_state_->maps, address, out, known);
}

void ReplayCursor::ZeroStaleBytes(Address address, std::span<std::uint8_t> out,
                                  std::span<std::uint8_t> known) const {
  const Address last = address + (out.size() - 1);  // inclusive
  std::uint8_t since_values[kPageSize], since_known[kPageSize];
  for (const MappingState::Refill& refill : mapping_state_->refilled) {
    if (refill.start > last || refill.start + (refill.size - 1) < address) continue;
    const Address from = std::max(refill.start, address);
    const Address to = std::min(refill.start + (refill.size - 1), last);  // inclusive
    // One index walk per page: the bytes events since the mapping wrote
    // (a per-range last-write search costs one search per written piece).
    for (Address lo = from; lo <= to;) {
      const Address page_last = lo | (kPageSize - 1);
      const Address hi = std::min(to, page_last);  // inclusive
      const std::size_t n = static_cast<std::size_t>(hi - lo) + 1;
      std::memset(since_known, 0, n);
      index_.WriteState(lo, hi + 1, refill.map_event, position_, since_values, since_known);
      const std::size_t at = static_cast<std::size_t>(lo - address);
      for (std::size_t k = 0; k < n; ++k) {
        if (since_known[k]) continue;
        out[at + k] = 0;
        known[at + k] = 1;
      }
      if (hi == to) break;
      lo = hi + 1;
    }
  }
}

PageCache::Page* ReplayCursor::LoadPage(Address base) const {
  if (PageCache::Page* page = pages_.Find(base)) {
    pages_.Touch(page);
    return page;
  }
  if (journal_.unrecorded() > 0 && !journal_.RecordUnrecordedWrites(*reader_)) return nullptr;
  journal_.set_recording_writes(true);
  PageCache::Page* page = pages_.Claim();
  std::span<std::uint8_t> values(page->values(), kPageSize);
  std::span<std::uint8_t> known(page->known(), kPageSize);
  // Read where the journal's writes to the page start, then replay them,
  // keeping the old bytes each one overwrote: backward steps through the
  // journal can then restore the page without the index.
  ReadNativeMemory(index_, image_, journal_.PageReadPosition(), base, values, known);
  journal_.BringPageForward(base, values, known);
  pages_.Commit(page, base);
  return page;
}

void ReplayCursor::ReadCached(Address address, std::span<std::uint8_t> out,
                              std::span<std::uint8_t> known) const {
  for (std::size_t done = 0; done < out.size();) {
    const Address a = address + done;
    const std::size_t offset = a & (kPageSize - 1);
    const std::size_t n = std::min<std::size_t>(out.size() - done, kPageSize - offset);
    PageCache::Page* page = pages_.ShouldCache(a - offset) ? LoadPage(a - offset) : nullptr;
    if (page == nullptr) {
      ReadNativeMemory(index_, image_, position_, a, out.subspan(done, n), known.subspan(done, n));
    } else {
      std::memcpy(out.data() + done, page->values() + offset, n);
      std::memcpy(known.data() + done, page->known() + offset, n);
    }
    done += n;
  }
}

void ReplayCursor::PatchWrites(bool journal) {
  if (event_.flags & kEventClearsMemory) pages_.Drop();
  for (const MemoryAccess& access : event_.writes) {
    for (std::size_t done = 0; done < access.data.size();) {
      const Address a = access.address + done;
      const std::size_t offset = a & (kPageSize - 1);
      const std::size_t n = std::min<std::size_t>(access.data.size() - done, kPageSize - offset);
      const std::uint8_t* data = access.data.data() + done;
      done += n;
      PageCache::Page* page = pages_.Find(a - offset);
      if (journal) journal_.RecordWrite(a, {data, n}, page ? page->values() + offset : nullptr);
      if (page != nullptr) {
        std::memcpy(page->values() + offset, data, n);
        std::memset(page->known() + offset, 1, n);
      }
    }
  }
}

Expected<PagingRegisters> ReplayCursor::Paging() const {
  const std::optional<std::size_t> thread = index_.ThreadIndexOf(current_thread());
  if (!thread) return Status::Unsupported(trace_.path() + ": no thread to translate with");
  const PagingRegisters paging = PagingFromState(regs_[*thread], trace_.header());
  if (!paging.registers_known) {
    return Status::Unsupported(trace_.path() + ": paging registers unknown at position " +
                               std::to_string(position_));
  }
  return paging;
}

// Page-table reads at this position (entries are at most 8 bytes).
PhysicalReadFn ReplayCursor::PhysicalReader() const {
  return [this](Address pa, std::span<std::uint8_t> bytes) {
    std::uint8_t k[64];
    if (bytes.size() > sizeof(k)) return false;
    ReadCached(pa, bytes, {k, bytes.size()});
    return std::all_of(k, k + bytes.size(), [](std::uint8_t b) { return b != 0; });
  };
}

Status ReplayCursor::ReadVirtual(Address address, std::span<std::uint8_t> out,
                                 std::span<std::uint8_t> known) const {
  std::fill(out.begin(), out.end(), 0);
  std::fill(known.begin(), known.end(), 0);
  BACKSTEP_ASSIGN_OR_RETURN(const PagingRegisters paging, Paging());
  const PhysicalReadFn read = PhysicalReader();
  for (std::size_t done = 0; done < out.size();) {
    const Address va = address + done;
    Expected<Translation> t = TranslateX86(paging, va, read);
    std::size_t n = std::min<std::size_t>(out.size() - done, kPageSize - (va & (kPageSize - 1)));
    if (t.ok()) {
      if (t->page_size == 0) {
        n = out.size() - done;
      } else {
        n = std::min<std::size_t>(out.size() - done, t->page_size - (va & (t->page_size - 1)));
      }
      ReadCached(t->physical, out.subspan(done, n), known.subspan(done, n));
    }
    done += n;  // unmapped: unknown bytes up to the next 4 KiB boundary
  }
  return Status();
}

Expected<std::vector<NativeRange>> ReplayCursor::TranslateRange(Address address,
                                                                std::uint64_t length) const {
  std::vector<NativeRange> out;
  auto add_pages = [&out](Address native, Address debugger, std::uint64_t n) {
    while (n > 0) {
      const std::uint64_t k = std::min<std::uint64_t>(n, kPageSize - (native & (kPageSize - 1)));
      out.push_back({native, native + k, debugger});
      native += k;
      debugger += k;
      n -= k;
    }
  };
  if (!index_.physical()) {
    add_pages(address, address, length);
    return out;
  }
  BACKSTEP_ASSIGN_OR_RETURN(const PagingRegisters paging, Paging());
  const PhysicalReadFn read = PhysicalReader();
  for (std::uint64_t done = 0; done < length;) {
    const Address va = address + done;
    const std::uint64_t n =
        std::min<std::uint64_t>(length - done, kPageSize - (va & (kPageSize - 1)));
    Expected<Translation> t = TranslateX86(paging, va, read);
    if (t.ok()) add_pages(t->physical, va, n);
    done += n;
  }
  return out;
}

}  // namespace backstep::core
