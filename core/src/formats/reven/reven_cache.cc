#include "formats/reven/reven_cache.h"

#include <algorithm>

#include "formats/reven/reven_format.h"
#include "util/atomic_file.h"
#include "util/hex.h"

namespace backstep::core {
namespace {

constexpr std::string_view kIndex = "cache index";
constexpr std::uint32_t kMaxPageSize = 1u << 30;

void AppendLe(std::uint64_t v, int bytes, std::vector<std::uint8_t>* out) {
  for (int i = 0; i < bytes; ++i) out->push_back(static_cast<std::uint8_t>(v >> (8 * i)));
}

void PatchLe(std::uint64_t v, std::size_t at, std::vector<std::uint8_t>* out) {
  for (int i = 0; i < 8; ++i) (*out)[at + i] = static_cast<std::uint8_t>(v >> (8 * i));
}

}  // namespace

Expected<std::unique_ptr<RevenCache>> RevenCache::Open(std::shared_ptr<const ByteSource> source,
                                                       const RevenEventDecoder& decoder,
                                                       std::uint64_t events_payload_size,
                                                       std::uint64_t event_count) {
  // Everything is validated here, once: ResumePoints() may then trust the
  // offsets, and a bad cache is refused as a whole rather than half used.
  std::unique_ptr<RevenCache> cache(new RevenCache);
  cache->source_ = source;
  const std::string& file = source->name();
  ByteReader r(source->data());
  BACKSTEP_ASSIGN_OR_RETURN(auto md, ParseRevenMetadata(r, file, kRevenResourceTraceCache));
  (void)md;
  BACKSTEP_ASSIGN_OR_RETURN(ByteReader header, ReadRevenSection(r, file, "cache header"));
  const std::uint64_t at = header.offset();
  cache->page_size_ = header.U32();
  if (!header.ok()) return RevenCorruption(file, "cache header", at, "section too short");
  if (cache->page_size_ == 0 || cache->page_size_ > kMaxPageSize) {
    return RevenCorruption(file, "cache header", at,
                           "page size " + std::to_string(cache->page_size_) + " is absurd");
  }
  BACKSTEP_ASSIGN_OR_RETURN(cache->blob_, ReadRevenSection(r, file, "cache points"));
  BACKSTEP_ASSIGN_OR_RETURN(ByteReader index, ReadRevenSection(r, file, kIndex));
  BACKSTEP_RETURN_IF_ERROR(cache->ParseIndex(index, decoder, events_payload_size, event_count));
  return cache;
}

Status RevenCache::ParseIndex(ByteReader r, const RevenEventDecoder& decoder,
                              std::uint64_t events_payload_size, std::uint64_t event_count) {
  const std::string& file = source_->name();
  const std::uint64_t count_at = r.offset();
  const std::uint64_t count = r.U64();
  if (!r.ok()) return RevenCorruption(file, kIndex, count_at, "section too short");
  if (count > r.remaining() / kRevenCacheEntryFixedSize) {
    return RevenCorruption(file, kIndex, count_at,
                           std::to_string(count) + " cache points cannot fit in the " +
                               std::to_string(r.remaining()) + " bytes left");
  }
  points_.reserve(count);
  std::vector<RegisterWrite> scratch;
  for (std::uint64_t i = 0; i < count; ++i) {
    const std::uint64_t at = r.offset();
    Point p;
    p.context_id = r.U64();
    p.trace_events_offset = r.U64();
    p.cpu_offset = r.U64();
    const std::uint32_t npages = r.U32();
    if (!r.ok()) return RevenCorruption(file, kIndex, at, "section ends inside an entry");
    auto fail = [&](std::string_view what) {
      return RevenCorruption(
          file, kIndex, at,
          "cache point " + std::to_string(p.context_id) + ": " + std::string(what));
    };
    if (p.context_id == 0) return fail("context 0 is the initial state, not a cache point");
    if (!points_.empty() && p.context_id >= points_.back().context_id) {
      return fail("index not in strictly descending context order");
    }
    if (event_count != 0 && p.context_id > event_count) {
      return fail("beyond the trace's " + std::to_string(event_count) + " events");
    }
    if (p.trace_events_offset < 8 || p.trace_events_offset > events_payload_size) {
      return fail("trace offset " + HexU64(p.trace_events_offset) + " outside the events section");
    }
    if (npages > r.remaining() / kRevenCachePageEntrySize) {
      return fail(std::to_string(npages) + " pages cannot fit in the index");
    }
    for (std::uint32_t k = 0; k < npages; ++k) {
      const std::uint64_t address = r.U64();
      const std::uint64_t offset = r.U64();
      if (address % page_size_ != 0) return fail("page " + HexU64(address) + " is not aligned");
      if (offset > blob_.remaining() || page_size_ > blob_.remaining() - offset) {
        return fail("page " + HexU64(address) + " lies outside the cache points section");
      }
    }
    scratch.clear();
    BACKSTEP_RETURN_IF_ERROR(DecodeRegisters(p, decoder, &scratch));
    points_.push_back(p);
  }
  // Stored ascending: consumers search for the last point before a position.
  std::reverse(points_.begin(), points_.end());
  return Status::Ok();
}

Status RevenCache::DecodeRegisters(const Point& p, const RevenEventDecoder& decoder,
                                   std::vector<RegisterWrite>* out) const {
  const std::string& file = source_->name();
  if (p.cpu_offset >= blob_.remaining()) {
    return RevenCorruption(file, kIndex, blob_.offset(),
                           "cache point " + std::to_string(p.context_id) + ": cpu offset " +
                               HexU64(p.cpu_offset) + " outside the cache points section");
  }
  ByteReader r = blob_;
  r.Seek(static_cast<std::size_t>(p.cpu_offset));
  const std::uint64_t at = r.offset();
  const std::uint16_t n = r.U16();
  if (!r.ok()) return RevenCorruption(file, "cache points", at, "cpu record cut short");
  return decoder.DecodeRegisterSet(r, n, /*sized=*/true, file, "cache points", out);
}

Status AppendRevenCache(RevenMetadata md, std::uint32_t page_size,
                        const std::vector<RevenCachePointData>& points,
                        std::vector<std::uint8_t>* out) {
  md.resource_type = kRevenResourceTraceCache;
  BACKSTEP_RETURN_IF_ERROR(AppendRevenMetadata(md, out));
  AppendLe(4, 8, out);
  AppendLe(page_size, 4, out);
  // Blob in ascending order (how producers write it as they go), index
  // descending (as the reference writer's map orders it).
  std::vector<const RevenCachePointData*> order;
  for (const auto& p : points) order.push_back(&p);
  std::sort(order.begin(), order.end(),
            [](auto* a, auto* b) { return a->context_id < b->context_id; });
  struct Offsets {
    std::uint64_t cpu;
    std::vector<std::uint64_t> pages;
  };
  std::vector<Offsets> offsets;
  const std::size_t blob_size_at = out->size();
  AppendLe(0, 8, out);
  const std::size_t blob_at = out->size();
  for (const RevenCachePointData* p : order) {
    Offsets& o = offsets.emplace_back();
    o.cpu = out->size() - blob_at;
    AppendLe(p->registers.size(), 2, out);
    for (const auto& [id, value] : p->registers) {
      AppendLe(id, 2, out);
      AppendLe(value.size(), 2, out);
      out->insert(out->end(), value.begin(), value.end());
    }
    for (const auto& page : p->pages) {
      o.pages.push_back(out->size() - blob_at);
      out->insert(out->end(), page.second.begin(), page.second.end());
    }
  }
  PatchLe(out->size() - blob_at, blob_size_at, out);
  // Index, descending.
  const std::size_t index_size_at = out->size();
  AppendLe(0, 8, out);
  const std::size_t index_at = out->size();
  AppendLe(order.size(), 8, out);
  for (std::size_t i = order.size(); i-- > 0;) {
    const RevenCachePointData* p = order[i];
    AppendLe(p->context_id, 8, out);
    AppendLe(p->trace_events_offset, 8, out);
    AppendLe(offsets[i].cpu, 8, out);
    AppendLe(p->pages.size(), 4, out);
    for (std::size_t k = 0; k < p->pages.size(); ++k) {
      AppendLe(p->pages[k].first, 8, out);
      AppendLe(offsets[i].pages[k], 8, out);
    }
  }
  PatchLe(out->size() - index_at, index_size_at, out);
  return Status::Ok();
}

Status WriteRevenCacheFile(const std::string& path, const RevenMetadata& md,
                           std::uint32_t page_size,
                           const std::vector<RevenCachePointData>& points) {
  std::vector<std::uint8_t> bytes;
  BACKSTEP_RETURN_IF_ERROR(AppendRevenCache(md, page_size, points, &bytes));
  BACKSTEP_ASSIGN_OR_RETURN(AtomicFile file, AtomicFile::Create(path));
  file.Write(bytes);
  return file.Commit();
}

}  // namespace backstep::core
