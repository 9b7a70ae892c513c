#include "backstep/core/mappings.h"

#include <algorithm>
#include <iterator>
#include <optional>

#include "backstep/core/number.h"

namespace backstep::core {
namespace {

constexpr std::string_view kNotZeroFilled = "(not zero-filled)";

// "0x1a2b" only: the mapping notes write every number in hex.
std::optional<std::uint64_t> ParseHexNumber(std::string_view text) {
  if (!text.starts_with("0x")) return std::nullopt;
  return ParseNumber(text);
}

// The next space-separated word of *text (consumed with its space).
std::string_view TakeWord(std::string_view* text) {
  std::size_t space = text->find(' ');
  std::string_view word = text->substr(0, space);
  *text = space == std::string_view::npos ? std::string_view() : text->substr(space + 1);
  return word;
}

// "0xSTART+0xSIZE", nonempty and not wrapping.
bool ParseRange(std::string_view text, MappingChange* change) {
  std::size_t plus = text.find('+');
  if (plus == std::string_view::npos) return false;
  auto start = ParseHexNumber(text.substr(0, plus));
  auto size = ParseHexNumber(text.substr(plus + 1));
  if (!start || !size || *size == 0 || *size - 1 > ~*start) return false;
  change->start = *start;
  change->size = *size;
  return true;
}

bool IsPermissions(std::string_view text) {
  return text.size() == 3 && (text[0] == 'r' || text[0] == '-') &&
         (text[1] == 'w' || text[1] == '-') && (text[2] == 'x' || text[2] == '-');
}

// What follows a map's permissions: "[DESC ][FILE@0xOFF]". The recorder
// writes DESC = FILE for file mappings.
void ParseMapNames(std::string_view rest, MappingChange* change) {
  if (rest.ends_with(kNotZeroFilled)) {
    change->unfilled = true;
    rest.remove_suffix(kNotZeroFilled.size());
    if (rest.ends_with(' ')) rest.remove_suffix(1);
  }
  std::size_t at = rest.rfind('@');
  std::optional<std::uint64_t> offset;
  if (at != std::string_view::npos) offset = ParseHexNumber(rest.substr(at + 1));
  if (!offset) {
    change->name = std::string(rest);
    return;
  }
  change->file_offset = *offset;
  std::string_view names = rest.substr(0, at);
  // "FILE FILE" (a description equal to the file), "DESC FILE" or "FILE".
  std::size_t half = names.size() / 2;
  if (names.size() % 2 == 1 && names[half] == ' ' &&
      names.substr(0, half) == names.substr(half + 1)) {
    change->name = std::string(names.substr(half + 1));
  } else if (std::size_t slash = names.find(" /"); slash != std::string_view::npos) {
    change->name = std::string(names.substr(slash + 1));
  } else {
    change->name = std::string(names);
  }
}

std::optional<MappingChange> ParsePart(std::string_view part) {
  MappingChange change;
  std::string_view verb = TakeWord(&part);
  if (verb == "map") {
    change.kind = MappingChange::Kind::kMap;
  } else if (verb == "unmap") {
    change.kind = MappingChange::Kind::kUnmap;
  } else if (verb == "protect") {
    change.kind = MappingChange::Kind::kProtect;
  } else {
    return std::nullopt;
  }
  if (!ParseRange(TakeWord(&part), &change)) return std::nullopt;
  if (change.kind == MappingChange::Kind::kUnmap) return change;
  std::string_view permissions = TakeWord(&part);
  if (!IsPermissions(permissions)) return std::nullopt;
  change.permissions = std::string(permissions);
  if (change.kind == MappingChange::Kind::kMap) ParseMapNames(part, &change);
  return change;
}

// Cuts the pieces of `maps` at `address` so that none straddles it.
void SplitAt(std::map<Address, Mapping>& maps, Address address) {
  auto it = maps.upper_bound(address);
  if (it == maps.begin()) return;
  --it;
  Mapping& left = it->second;
  if (address <= left.start || address >= left.end()) return;
  Mapping right = left;
  right.start = address;
  right.size = left.end() - address;
  if (!right.name.empty() && right.name[0] == '/') right.file_offset += address - left.start;
  left.size = address - left.start;
  maps.emplace(address, std::move(right));
}

// Whether any piece of `maps` overlaps the range of `change`.
bool Overlaps(const std::map<Address, Mapping>& maps, const MappingChange& change) {
  auto it = maps.upper_bound(change.start);
  if (it != maps.begin() && std::prev(it)->second.end() - 1 >= change.start) return true;
  return it != maps.end() && it->first - change.start < change.size;
}

// Calls fn(mapping, i, n) for each mapping of `maps` (sorted,
// non-overlapping) that overlaps [addr, addr + length): its bytes are
// [addr + i, addr + i + n). The range may end at 2^64.
template <typename Fn>
void ForEachOverlap(std::span<const Mapping> maps, Address addr, std::size_t length, Fn fn) {
  if (length == 0 || maps.empty()) return;
  const Address last = addr + (length - 1);  // inclusive: the range may end at 2^64
  // The first mapping that ends after addr.
  auto it = std::upper_bound(maps.begin(), maps.end(), addr,
                             [](Address a, const Mapping& m) { return a < m.start; });
  if (it != maps.begin() && std::prev(it)->end() - 1 >= addr) --it;
  for (; it != maps.end() && it->start <= last; ++it) {
    if (it->size == 0) continue;
    const Address from = std::max(it->start, addr);
    const Address to = std::min(it->start + (it->size - 1), last);  // inclusive
    fn(*it, static_cast<std::size_t>(from - addr), static_cast<std::size_t>(to - from) + 1);
  }
}

}  // namespace

std::vector<MappingChange> ParseMappingChanges(std::string_view description) {
  std::vector<MappingChange> out;
  while (!description.empty()) {
    std::size_t end = description.find("; ");
    std::string_view part = description.substr(0, end);
    description = end == std::string_view::npos ? std::string_view() : description.substr(end + 2);
    if (auto change = ParsePart(part)) out.push_back(std::move(*change));
  }
  return out;
}

void ApplyMappingChange(std::map<Address, Mapping>& maps, const MappingChange& change) {
  const Address end = change.start + change.size;  // 0 when the range reaches 2^64
  SplitAt(maps, change.start);
  if (end != 0) SplitAt(maps, end);
  auto first = maps.lower_bound(change.start);
  auto last = end == 0 ? maps.end() : maps.lower_bound(end);
  switch (change.kind) {
    case MappingChange::Kind::kMap:
      maps.erase(first, last);
      maps.emplace(change.start, Mapping{change.start, change.size, change.permissions,
                                         change.file_offset, change.name, change.unfilled});
      break;
    case MappingChange::Kind::kUnmap:
      maps.erase(first, last);
      break;
    case MappingChange::Kind::kProtect:
      for (auto it = first; it != last; ++it) it->second.permissions = change.permissions;
      break;
  }
}

std::vector<Mapping> JoinedMappings(const std::map<Address, Mapping>& maps) {
  std::vector<Mapping> out;
  for (const auto& [start, m] : maps) {
    if (!out.empty()) {
      Mapping& last = out.back();
      // Only anonymous pieces: the kernel keeps a file mapping's pieces
      // apart once one was re-protected (glibc's RELRO next to its r--
      // segment), and a file mapping is never grown piece by piece.
      const bool file = !m.name.empty() && m.name[0] == '/';
      if (!file && last.end() == m.start && last.name == m.name &&
          last.permissions == m.permissions && last.unfilled == m.unfilled) {
        last.size += m.size;
        continue;
      }
    }
    out.push_back(m);
  }
  return out;
}

void FillUnfilledMappings(std::span<const Mapping> maps, Address addr, std::span<std::uint8_t> out,
                          std::span<std::uint8_t> known) {
  ForEachOverlap(maps, addr, out.size(), [&](const Mapping& m, std::size_t i, std::size_t n) {
    if (!m.unfilled) return;
    for (std::size_t k = i; k < i + n; ++k) {
      if (known[k] == 0) {
        out[k] = 0;
        known[k] = 1;
      }
    }
  });
}

void MaskUnmapped(std::span<const Mapping> unmapped, Address addr, std::span<std::uint8_t> out,
                  std::span<std::uint8_t> known) {
  ForEachOverlap(unmapped, addr, out.size(), [&](const Mapping&, std::size_t i, std::size_t n) {
    std::fill_n(out.begin() + i, n, std::uint8_t{0});
    std::fill_n(known.begin() + i, n, std::uint8_t{0});
  });
}

MappingTimeline::MappingTimeline(std::shared_ptr<const Trace> trace, Source source)
    : MappingTimeline(*trace, source) {
  owner_ = std::move(trace);
}

MappingTimeline::MappingTimeline(const Trace& trace, Source source)
    : trace_(&trace), source_(source) {
  for (const MemoryRegion& region : trace_->header().regions) {
    if (region.size == 0) continue;
    initial_[region.start] =
        Mapping{region.start, region.size, region.permissions, region.file_offset, region.name};
  }
  built_maps_ = initial_;
}

Status MappingTimeline::ScanTo(Position position) const {
  if (position <= scanned_) return Status::Ok();
  const std::vector<NotedEvent>* noted =
      source_ == Source::kIndex ? trace_->noted_events() : nullptr;
  if (noted != nullptr) {
    // The index lists every event that describes a change: nothing to decode.
    for (const NotedEvent& e : *noted) {
      for (MappingChange& change : ParseMappingChanges(e.description)) {
        changes_.emplace_back(Position(e.event + 1), std::move(change));
      }
    }
    scanned_ = Position::Max();
    return Status::Ok();
  }
  if (reader_ == nullptr) {
    BACKSTEP_ASSIGN_OR_RETURN(reader_, trace_->NewReader());
  }
  while (scanned_ < position) {
    BACKSTEP_ASSIGN_OR_RETURN(bool more, reader_->Next(&event_));
    if (!more) {
      scanned_ = Position::Max();
      break;
    }
    scanned_ = scanned_ + 1;
    if (event_.description.empty()) continue;
    for (MappingChange& change : ParseMappingChanges(event_.description)) {
      changes_.emplace_back(scanned_, std::move(change));
    }
  }
  return Status::Ok();
}

std::shared_ptr<const MappingState> MappingTimeline::Build(std::size_t applied) const {
  if (applied < built_applied_) {
    built_applied_ = 0;
    built_maps_ = initial_;
    built_unmapped_.clear();
  }
  reused_.resize(changes_.size());
  for (; built_applied_ < applied; ++built_applied_) {
    const MappingChange& change = changes_[built_applied_].second;
    if (change.kind == MappingChange::Kind::kMap && change.unfilled) {
      reused_[built_applied_] = Overlaps(built_maps_, change) || Overlaps(built_unmapped_, change);
    }
    ApplyMappingChange(built_maps_, change);
    // The unmapped ranges are kept as pieces of one anonymous kind, so the
    // same splitting applies: an unmap adds its range, a map removes it.
    if (change.kind == MappingChange::Kind::kProtect) continue;
    MappingChange piece;
    piece.kind = change.kind == MappingChange::Kind::kUnmap ? MappingChange::Kind::kMap
                                                            : MappingChange::Kind::kUnmap;
    piece.start = change.start;
    piece.size = change.size;
    ApplyMappingChange(built_unmapped_, piece);
  }
  auto state = std::make_shared<MappingState>();
  state->maps = JoinedMappings(built_maps_);
  state->unmapped = JoinedMappings(built_unmapped_);
  // Each unfilled piece comes from the last unfilled map covering its start.
  for (const auto& [start, piece] : built_maps_) {
    if (!piece.unfilled) continue;
    for (std::size_t i = applied; i-- > 0;) {
      const MappingChange& change = changes_[i].second;
      if (change.kind != MappingChange::Kind::kMap || !change.unfilled || start < change.start ||
          start - change.start >= change.size) {
        continue;
      }
      if (reused_[i]) {
        state->refilled.push_back({start, piece.size, changes_[i].first.value - 1});
      }
      break;
    }
  }
  return state;
}

Expected<std::shared_ptr<const MappingState>> MappingTimeline::StateAt(Position position) const {
  if (position > Position(trace_->event_count())) position = Position(trace_->event_count());
  std::lock_guard<std::mutex> lock(mutex_);
  BACKSTEP_RETURN_IF_ERROR(ScanTo(position));
  // The changes that apply at `position`: those from a position <= it.
  const std::size_t applied = static_cast<std::size_t>(
      std::upper_bound(changes_.begin(), changes_.end(), position,
                       [](Position p, const auto& change) { return p < change.first; }) -
      changes_.begin());
  for (const auto& [count, state] : states_) {
    if (count == applied) return state;
  }
  constexpr std::size_t kKeptStates = 64;
  if (states_.size() == kKeptStates) states_.erase(states_.begin());
  states_.emplace_back(applied, Build(applied));
  return states_.back().second;
}

Expected<std::vector<Mapping>> MappingTimeline::At(Position position) const {
  BACKSTEP_ASSIGN_OR_RETURN(std::shared_ptr<const MappingState> state, StateAt(position));
  return state->maps;
}

bool MappingTimeline::saw_changes() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return !changes_.empty();
}

}  // namespace backstep::core
