#include "recorder/native/mapping_names.h"

#include <sys/mman.h>
#include <sys/syscall.h>

#include <algorithm>
#include <utility>

namespace backstep::record {
namespace {

constexpr std::uint64_t kPage = 4096;

std::uint64_t Pages(std::uint64_t n) { return (n + kPage - 1) / kPage * kPage; }

}  // namespace

MappingNames MappingNames::After(const NativeLog& log, std::size_t count) {
  MappingNames names;
  const std::size_t n = std::min(count, log.syscalls.size());
  for (std::size_t i = 0; i < n; ++i) names.Follow(log.syscalls[i]);
  return names;
}

void MappingNames::Erase(std::uint64_t start, std::uint64_t end) {
  if (start >= end) return;
  auto it = ranges_.lower_bound(start);
  if (it != ranges_.begin() && std::prev(it)->second.end > start) --it;
  std::vector<NamedRange> kept;
  while (it != ranges_.end() && it->second.start < end) {
    const NamedRange r = it->second;
    it = ranges_.erase(it);
    if (r.start < start) kept.push_back({r.start, start, r.path, r.offset});
    if (r.end > end) kept.push_back({end, r.end, r.path, r.offset + (end - r.start)});
  }
  for (NamedRange& r : kept) ranges_.emplace(r.start, std::move(r));
}

void MappingNames::Follow(const LoggedSyscall& call) {
  const user_regs_struct& e = call.entry;
  const std::uint64_t nr = e.orig_rax, result = call.exit.rax;
  if (result > ~std::uint64_t{4095}) return;
  if (nr == SYS_mmap) {
    const std::uint64_t end = result + Pages(e.rsi);
    Erase(result, end);
    if (call.mapped) ranges_[result] = {result, end, call.mapped->path, call.mapped->offset};
  } else if (nr == SYS_shmat && call.mapped) {
    const std::uint64_t end = result + call.mapped->size;
    Erase(result, end);
    ranges_[result] = {result, end, call.mapped->path, call.mapped->offset};
  } else if (nr == SYS_shmdt && call.mapped) {
    Erase(e.rdi, e.rdi + call.mapped->size);
  } else if (nr == SYS_munmap) {
    Erase(e.rdi, e.rdi + Pages(e.rsi));
  } else if (nr == SYS_mremap) {
    // [old, old + old_size) moves to `result` with new_size bytes: what it
    // named there keeps its names, cut to the new size; grown, the piece
    // that reached the old end goes on in its file.
    const std::uint64_t old = e.rdi, old_size = Pages(e.rsi), new_size = Pages(e.rdx);
    std::vector<NamedRange> moved;
    for (const NamedRange& r : ranges()) {
      const std::uint64_t s = std::max(r.start, old), t = std::min(r.end, old + old_size);
      if (s < t) moved.push_back({s, t, r.path, r.offset + (s - r.start)});
    }
    if (new_size > old_size && !moved.empty() && moved.back().end == old + old_size)
      moved.back().end = old + new_size;
    if (!(e.r10 & MREMAP_DONTUNMAP)) Erase(old, old + old_size);
    Erase(result, result + new_size);
    for (NamedRange& r : moved) {
      if (r.start >= old + new_size) continue;
      r.end = std::min(r.end, old + new_size);
      r.start = r.start - old + result;
      r.end = r.end - old + result;
      ranges_[r.start] = std::move(r);
    }
  }
}

void MappingNames::Rename(std::vector<Mapping>* maps) const {
  if (ranges_.empty()) return;
  std::vector<Mapping> out;
  out.reserve(maps->size());
  for (Mapping& m : *maps) {
    auto it = ranges_.lower_bound(m.start);
    if (it != ranges_.begin() && std::prev(it)->second.end > m.start) --it;
    if (it == ranges_.end() || it->second.start >= m.end()) {
      out.push_back(std::move(m));
      continue;
    }
    // Pieces: the proxy's own between the named ranges, the ranges' names in them.
    auto piece = [&](std::uint64_t s, std::uint64_t t, const NamedRange* named) {
      Mapping p = m;
      p.start = s;
      p.size = t - s;
      if (named) {
        p.name = named->path;
        p.file_offset = named->offset + (s - named->start);
      } else {
        p.file_offset = m.file_offset + (s - m.start);
      }
      out.push_back(std::move(p));
    };
    std::uint64_t at = m.start;
    for (; it != ranges_.end() && it->second.start < m.end(); ++it) {
      const NamedRange& r = it->second;
      const std::uint64_t s = std::max(r.start, m.start), t = std::min(r.end, m.end());
      if (at < s) piece(at, s, nullptr);
      piece(s, t, &r);
      at = t;
    }
    if (at < m.end()) piece(at, m.end(), nullptr);
  }
  *maps = std::move(out);
}

std::vector<MappingNames::NamedRange> MappingNames::ranges() const {
  std::vector<NamedRange> out;
  out.reserve(ranges_.size());
  for (const auto& [start, r] : ranges_) out.push_back(r);
  return out;
}

}  // namespace backstep::record
