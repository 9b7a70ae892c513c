#include "index/pc_index_builder.h"

#include <algorithm>

namespace backstep::core {

void PcIndexBuilder::Add(std::uint64_t pc, std::uint64_t event) {
  // A direct-mapped cache in front of the hash map: a program's hot loop
  // has few pcs, and this is once per event.
  Slot& slot = cache_[(pc * 0x9E3779B97F4A7C15ull) >> (64 - kCacheBits)];
  if (!slot.postings || slot.pc != pc) {
    auto [it, inserted] = pcs_.try_emplace(pc);
    if (inserted) memory_bytes_ += 96;
    slot = {pc, &it->second};
  }
  Postings& p = *slot.postings;
  if (p.count % kPostingsPerBlock == 0) {
    p.skips.push_back({event, p.data.size()});
    memory_bytes_ += sizeof(SkipRecord);
  } else {
    std::uint8_t buf[10];
    std::uint8_t* out = buf;
    PutVarint(event - p.last, out);
    p.data.AppendShort(buf, out - buf);
    memory_bytes_ += out - buf;
  }
  p.last = event;
  ++p.count;
}

std::pair<std::uint64_t, std::uint64_t> PcIndexBuilder::Flush(IndexSink& sink) {
  std::vector<std::uint64_t> order;
  order.reserve(pcs_.size());
  for (const auto& [pc, postings] : pcs_) order.push_back(pc);
  std::sort(order.begin(), order.end());
  std::vector<PcRecord> records;
  records.reserve(order.size());
  for (std::uint64_t pc : order) {
    Postings& p = pcs_.at(pc);
    PcRecord rec{pc, p.count, p.skips.front().first_event, sink.size()};
    sink.Write(p.data.bytes());
    sink.Pad8();
    if (HasSkipTable(rec)) {
      rec.skips_offset = sink.size();
      sink.WriteRecords<SkipRecord>(p.skips);
    }
    records.push_back(rec);
    p = Postings();
  }
  const std::uint64_t offset = sink.size();
  sink.WriteRecords<PcRecord>(records);
  pcs_.clear();
  cache_.fill({});
  memory_bytes_ = 0;
  return {offset, records.size()};
}

}  // namespace backstep::core
