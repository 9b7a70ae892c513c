#include "index/pc_index_builder.h"

#include <algorithm>

namespace backstep::core {

PcIndexBuilder::Postings& PcIndexBuilder::LookUp(std::uint64_t pc) {
  Slot& slot = cache_[(pc * 0x9E3779B97F4A7C15ull) >> (64 - kCacheBits)];
  if (!slot.postings || slot.pc != pc) {
    auto [it, inserted] = pcs_.try_emplace(pc);
    if (inserted) memory_bytes_ += 96;
    slot = {pc, &it->second};
  }
  if (previous_) previous_->next = slot.postings, previous_->next_pc = pc;
  return *slot.postings;
}

void PcIndexBuilder::StartBlock(Postings& p, std::uint64_t event) {
  EndRun(p);
  p.run_delta = 0;  // a block's deltas start afresh
  p.skips.push_back({event, p.data.size()});
  memory_bytes_ += sizeof(SkipRecord);
}

void PcIndexBuilder::WriteRun(Postings& p) {
  std::uint8_t one[10], escape[11];
  std::uint8_t* one_end = one;
  PutVarint(p.run_delta, one_end);
  std::uint8_t* escape_end = escape;
  *escape_end++ = 0;
  PutVarint(p.run_extra, escape_end);
  const std::size_t each = static_cast<std::size_t>(one_end - one);
  const std::size_t before = p.data.size();
  if (static_cast<std::uint64_t>(escape_end - escape) < p.run_extra * each) {
    p.data.AppendShort(escape, escape_end - escape);
  } else {
    for (std::uint64_t i = 0; i < p.run_extra; ++i) p.data.AppendShort(one, each);
  }
  memory_bytes_ += p.data.size() - before;
  p.run_extra = 0;
}

// p follows q with equal counts: every posting e of p has q at e - 1, and
// as many postings, so q's postings are exactly p's minus one. No cycle is
// possible (the earliest posting of a cycle would need an earlier one).
void PcIndexBuilder::Resolve(Postings& p) {
  if (p.leader) return;
  std::vector<Postings*> chain;
  Postings* q = &p;
  while (!q->leader && q->follows && q->follows->count == q->count) {
    chain.push_back(q);
    q = q->follows;
  }
  if (!q->leader) {
    q->leader = q;
    q->shift = 0;
  }
  for (auto it = chain.rbegin(); it != chain.rend(); ++it) {
    (*it)->leader = (*it)->follows->leader;
    (*it)->shift = (*it)->follows->shift + 1;
  }
}

std::pair<std::uint64_t, std::uint64_t> PcIndexBuilder::Flush(IndexSink& sink) {
  std::vector<std::pair<std::uint64_t, Postings*>> order;
  order.reserve(pcs_.size());
  for (auto& [pc, postings] : pcs_) order.emplace_back(pc, &postings);
  std::sort(order.begin(), order.end(),
            [](const auto& a, const auto& b) { return a.first < b.first; });
  for (std::uint64_t i = 0; i < order.size(); ++i) {
    order[i].second->index = i;
    EndRun(*order[i].second);
  }
  for (auto& [pc, p] : order) Resolve(*p);
  // Each group's entries, then the group records (index_format.h).
  std::vector<PcGroupRecord> groups;
  groups.reserve((order.size() + kPcsPerGroup - 1) / kPcsPerGroup);
  std::uint64_t prev_pc = 0;
  for (std::uint64_t i = 0; i < order.size(); ++i) {
    auto& [pc, p] = order[i];
    if (i % kPcsPerGroup == 0) {
      groups.push_back({pc, sink.size()});
      prev_pc = pc;
    }
    std::uint8_t head[4 * 10];
    std::uint8_t* out = head;
    PutVarint(pc - prev_pc, out);
    prev_pc = pc;
    const bool follower = p->leader != p;
    PutVarint(p->count << 1 | (follower ? 1 : 0), out);
    if (follower) {
      PutVarint(p->shift, out);
      PutVarint(ZigZag(static_cast<std::int64_t>(i - p->shift - p->leader->index)), out);
      sink.Write({head, static_cast<std::size_t>(out - head)});
      continue;
    }
    if (p->count <= kPostingsPerBlock) PutVarint(p->skips.front().first_event, out);
    PutVarint(p->data.size(), out);
    sink.Write({head, static_cast<std::size_t>(out - head)});
    if (p->count > kPostingsPerBlock) sink.WriteRecords<SkipRecord>(p->skips);
    sink.Write(p->data.bytes());
  }
  sink.Pad8();
  const std::uint64_t offset = sink.size();
  sink.WriteRecords<PcGroupRecord>(groups);
  const std::uint64_t count = order.size();
  pcs_.clear();
  cache_.fill({});
  previous_ = nullptr;
  memory_bytes_ = 0;
  return {offset, count};
}

}  // namespace backstep::core
