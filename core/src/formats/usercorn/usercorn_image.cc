#include "formats/usercorn/usercorn_image.h"

#include <algorithm>
#include <cstring>

#include "util/hex.h"

namespace backstep::core {

void UsercornImage::Erase(Pieces& pieces, Address first, Address last, bool shift) {
  auto it = pieces.upper_bound(first);
  if (it != pieces.begin()) --it;
  while (it != pieces.end() && it->first <= last) {
    const Address start = it->first;
    const Piece piece = it->second;
    if (piece.last < first) {
      ++it;
      continue;
    }
    it = pieces.erase(it);
    if (start < first) pieces.emplace(start, Piece{first - 1, piece.value});
    if (piece.last > last) {
      std::uint64_t value = piece.value;
      if (shift && value != kZero) value += last + 1 - start;
      pieces.emplace(last + 1, Piece{piece.last, value});
    }
  }
}

void UsercornImage::Map(Address address, std::uint64_t size, std::string name,
                        std::string permissions, std::optional<std::uint64_t> file_offset) {
  const Address last = address + (size - 1);
  Erase(content_, address, last, true);
  content_.emplace(address, Piece{last, kZero});
  Erase(regions_, address, last, false);
  regions_.emplace(address, Piece{last, names_.size()});
  names_.push_back(std::move(name));
  attributes_.push_back({address, std::move(permissions), file_offset});
}

void UsercornImage::Unmap(Address address, std::uint64_t size) {
  Erase(content_, address, address + (size - 1), true);
  Erase(regions_, address, address + (size - 1), false);
}

void UsercornImage::Write(Address address, std::span<const std::uint8_t> data) {
  if (data.empty()) return;
  const Address last = address + (data.size() - 1);
  Erase(content_, address, last, true);
  content_.emplace(address, Piece{last, blob_.size()});
  blob_.insert(blob_.end(), data.begin(), data.end());
  // Written bytes outside every mapping still need a region.
  std::vector<std::pair<Address, Address>> gaps;
  Address next = address;
  bool covered = false;
  auto it = regions_.upper_bound(address);
  if (it != regions_.begin()) --it;
  for (; it != regions_.end() && it->first <= last; ++it) {
    if (it->second.last < next) continue;
    if (it->first > next) gaps.emplace_back(next, it->first - 1);
    if (it->second.last >= last) {
      covered = true;
      break;
    }
    next = it->second.last + 1;
  }
  if (!covered) gaps.emplace_back(next, last);
  for (const auto& [lo, hi] : gaps) {
    regions_.emplace(lo, Piece{hi, names_.size()});
    names_.emplace_back();
    attributes_.emplace_back();
  }
}

void UsercornImage::NoteMapWrite(Address map_start, std::uint64_t map_size, std::string_view name,
                                 Address write_start, std::uint64_t write_size) {
  map_writes_.push_back({map_start, map_size, std::string(name), write_start, write_size});
}

void UsercornImage::Read(Address address, std::span<std::uint8_t> out,
                         std::span<std::uint8_t> known) const {
  std::fill(out.begin(), out.end(), 0);
  std::fill(known.begin(), known.end(), 0);
  if (out.empty()) return;
  const Address last = out.size() - 1 > ~address ? ~Address{0} : address + (out.size() - 1);
  auto it = content_.upper_bound(address);
  if (it != content_.begin()) --it;
  for (; it != content_.end() && it->first <= last; ++it) {
    const Address lo = std::max(address, it->first);
    const Address hi = std::min(last, it->second.last);
    if (lo > hi) continue;
    const std::size_t n = static_cast<std::size_t>(hi - lo) + 1;
    if (it->second.value != kZero) {
      std::memcpy(out.data() + (lo - address), blob_.data() + it->second.value + (lo - it->first),
                  n);
    }
    std::fill_n(known.begin() + (lo - address), n, 1);
  }
}

std::vector<MemoryRegion> UsercornImage::Regions() const {
  std::vector<MemoryRegion> out;
  for (const auto& [start, piece] : regions_) {
    // A region reaching 2^64 - 1 from 0 cannot state its size: clipped.
    const std::uint64_t size =
        piece.last - start + 1 == 0 ? ~std::uint64_t{0} : piece.last - start + 1;
    const MapAttributes& attributes = attributes_[piece.value];
    out.push_back(
        {start, size, names_[piece.value], attributes.permissions,
         attributes.file_offset ? *attributes.file_offset + (start - attributes.start) : 0});
  }
  return out;
}

std::vector<std::string> UsercornImage::TrimWarnings(std::optional<Address> sp) const {
  std::vector<std::string> out;
  for (const MapWrite& m : map_writes_) {
    if (m.write_start != m.map_start || m.write_size >= m.map_size) continue;
    const Address data_end = m.write_start + m.write_size;
    const Address map_last = m.map_start + (m.map_size - 1);
    const bool holds_sp = sp && *sp >= data_end && *sp <= map_last;
    const bool stack = m.name.find("stack") != std::string::npos;
    if (!holds_sp && !stack) continue;
    out.push_back("mapping " + HexU64(m.map_start) + "-" + HexU64(map_last + 1) +
                  (m.name.empty() ? "" : " (" + m.name + ")") + ": its " +
                  std::to_string(m.write_size) + " bytes of data start at the mapping's start" +
                  (holds_sp ? " and end below rsp " + HexU64(*sp) : "") +
                  "; usercorn trims leading zero bytes without moving the data, so it is "
                  "probably placed too low");
  }
  return out;
}

}  // namespace backstep::core
