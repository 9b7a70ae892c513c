#include "recorder/address_space.h"

#include <algorithm>
#include <cstring>
#include <set>

namespace backstep::record {
namespace {

// Mappings whose contents cannot be read or must not be diffed: the vvar
// page changes under the program's feet and ptrace cannot read it.
bool Skipped(const Mapping& m) { return m.name.rfind("[vvar", 0) == 0 || m.name == "[vsyscall]"; }

bool SameBacking(const Mapping& a, const Mapping& b) {
  return a.name == b.name && a.read == b.read && a.write == b.write && a.exec == b.exec &&
         (a.name.empty() || a.name[0] == '[' || a.file_offset - a.start == b.file_offset - b.start);
}

const Mapping* Covering(const std::vector<Mapping>& maps, core::Address a) {
  auto it = std::upper_bound(maps.begin(), maps.end(), a,
                             [](core::Address x, const Mapping& m) { return x < m.start; });
  if (it == maps.begin()) return nullptr;
  --it;
  return a < it->end() ? &*it : nullptr;
}

}  // namespace

core::Status AddressSpace::Init(const Tracee& tracee) {
  core::Expected<std::vector<Mapping>> maps = tracee.ReadMaps();
  if (!maps.ok()) return maps.status();
  if (rename_) rename_(&*maps);
  maps_ = std::move(*maps);
  shadow_.clear();
  for (const Mapping& m : maps_) {
    if (m.write && !Unshadowed(m)) Shadow(tracee, m);
  }
  return core::Status::Ok();
}

bool AddressSpace::Unshadowed(const Mapping& m) const {
  return Skipped(m) || std::any_of(skipped_.begin(), skipped_.end(), [&](const Range& r) {
           return r.start < m.end() && m.start < r.start + r.size;
         });
}

void AddressSpace::Shadow(const Tracee& tracee, const Mapping& m) {
  std::vector<std::uint8_t>& s = shadow_[m.start];
  s.resize(m.size);
  tracee.ReadMemoryZeroFill(m.start, s);
}

const Mapping* AddressSpace::Find(core::Address address) const { return Covering(maps_, address); }

void AddressSpace::Note(core::Address address, std::span<const std::uint8_t> data) {
  while (!data.empty()) {
    auto it = shadow_.upper_bound(address);
    if (it == shadow_.begin()) return;
    --it;
    const core::Address end = it->first + it->second.size();
    if (address >= end) {
      // Not in a shadowed mapping: skip to the next one.
      auto next = shadow_.upper_bound(address);
      if (next == shadow_.end() || next->first >= address + data.size()) return;
      data = data.subspan(next->first - address);
      address = next->first;
      continue;
    }
    const std::size_t n = std::min<std::uint64_t>(data.size(), end - address);
    std::memcpy(it->second.data() + (address - it->first), data.data(), n);
    data = data.subspan(n);
    address += n;
  }
}

void AddressSpace::ReadTraced(const Tracee& tracee, core::Address address,
                              std::span<std::uint8_t> out) const {
  tracee.ReadMemoryZeroFill(address, out);
  for (std::size_t i = 0; i < out.size();) {
    const core::Address a = address + i;
    auto it = shadow_.upper_bound(a);
    if (it == shadow_.begin() || a >= std::prev(it)->first + std::prev(it)->second.size()) {
      ++i;  // not writable: the tracee's bytes cannot have changed
      continue;
    }
    --it;
    const std::size_t n =
        std::min<std::uint64_t>(out.size() - i, it->first + it->second.size() - a);
    std::memcpy(out.data() + i, it->second.data() + (a - it->first), n);
    i += n;
  }
}

void AddressSpace::Changed(core::Address address, std::span<const std::uint8_t> data,
                           std::vector<Range>* changed) const {
  for (std::size_t i = 0; i < data.size();) {
    const core::Address a = address + i;
    auto it = shadow_.upper_bound(a);
    if (it == shadow_.begin() || a >= std::prev(it)->first + std::prev(it)->second.size()) {
      ++i;  // not writable
      continue;
    }
    --it;
    const std::uint8_t* shadow = it->second.data() + (a - it->first);
    const std::size_t n =
        std::min<std::uint64_t>(data.size() - i, it->first + it->second.size() - a);
    for (std::size_t j = 0; j < n;) {
      if (shadow[j] == data[i + j]) {
        ++j;
        continue;
      }
      std::size_t e = j;
      while (e < n && shadow[e] != data[i + e]) ++e;
      changed->push_back({a + j, e - j});
      j = e;
    }
    i += n;
  }
}

void AddressSpace::Diff(const Tracee& tracee, std::vector<Range>* ranges) {
  for (auto& [start, shadow] : shadow_) {
    scratch_.resize(shadow.size());
    tracee.ReadMemoryZeroFill(start, scratch_);
    std::size_t i = 0;
    const std::size_t n = shadow.size();
    while (i < n) {
      // Compare 64-byte blocks first: most memory is unchanged.
      if (i + 64 <= n && std::memcmp(&shadow[i], &scratch_[i], 64) == 0) {
        i += 64;
        continue;
      }
      if (shadow[i] == scratch_[i]) {
        ++i;
        continue;
      }
      std::size_t j = i;
      while (j < n && (shadow[j] != scratch_[j] ||
                       (j + 8 < n && std::memcmp(&shadow[j], &scratch_[j], 8) != 0)))
        ++j;
      ranges->push_back({start + i, j - i});
      std::memcpy(&shadow[i], &scratch_[i], j - i);
      i = j;
    }
  }
}

core::Status AddressSpace::Update(const Tracee& tracee, std::span<const Range> fresh,
                                  MapChanges* changes) {
  core::Expected<std::vector<Mapping>> next = tracee.ReadMaps();
  if (!next.ok()) return next.status();
  if (rename_) rename_(&*next);
  const std::vector<Mapping>& old_maps = maps_;
  const std::vector<Mapping>& new_maps = *next;
  // Elementary segments between every boundary of either list.
  std::set<core::Address> cuts;
  for (const auto* list : {&old_maps, &new_maps}) {
    for (const Mapping& m : *list) {
      cuts.insert(m.start);
      cuts.insert(m.end());
    }
  }
  for (const Range& r : fresh) {
    cuts.insert(r.start);
    cuts.insert(r.start + r.size);
  }
  auto in_fresh = [&](core::Address a) {
    return std::any_of(fresh.begin(), fresh.end(),
                       [&](const Range& r) { return a >= r.start && a < r.start + r.size; });
  };
  auto append = [](std::vector<Mapping>& out, const Mapping& m) {
    if (!out.empty() && out.back().end() == m.start && SameBacking(out.back(), m)) {
      out.back().size += m.size;
    } else {
      out.push_back(m);
    }
  };
  for (auto it = cuts.begin(); it != cuts.end() && std::next(it) != cuts.end(); ++it) {
    const core::Address a = *it, b = *std::next(it);
    const Mapping* o = Covering(old_maps, a);
    const Mapping* n = Covering(new_maps, a);
    if (!o && !n) continue;
    Mapping piece = n ? *n : *o;
    piece.file_offset += a - piece.start;
    piece.start = a;
    piece.size = b - a;
    if (o && !n) {
      append(changes->unmapped, piece);
    } else if (!o || in_fresh(a) || o->name != n->name) {
      if (o) append(changes->unmapped, piece);
      append(changes->mapped, piece);
    } else if (o->read != n->read || o->write != n->write || o->exec != n->exec) {
      append(changes->reprotected, piece);
    }
  }
  maps_ = std::move(*next);
  // Shadow: drop what is gone or no longer writable, add what became writable.
  for (auto it = shadow_.begin(); it != shadow_.end();) {
    const Mapping* m = Covering(maps_, it->first);
    const bool keep = m && m->start == it->first && m->size == it->second.size() && m->write &&
                      !in_fresh(it->first);
    it = keep ? std::next(it) : shadow_.erase(it);
  }
  for (const Mapping& m : maps_) {
    if (m.write && !Unshadowed(m) && !shadow_.count(m.start)) Shadow(tracee, m);
  }
  for (const Mapping& m : changes->mapped) {
    if (m.read && !Skipped(m)) changes->contents.push_back({m.start, m.size});
  }
  return core::Status::Ok();
}

std::uint64_t AddressSpace::shadow_bytes() const {
  std::uint64_t n = 0;
  for (const auto& [start, s] : shadow_) n += s.size();
  return n;
}

}  // namespace backstep::record
