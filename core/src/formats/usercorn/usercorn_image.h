// UsercornImage: the initial memory image a usercorn keyframe describes.
//
// The keyframe maps regions (MEM_MAP: zero-filled, as usercorn's replay
// maps them) and writes data into them (MEM_WRITE), in order; MEM_UNMAP
// removes a range. The image replays those ops into two interval maps: the
// content (zero or a slice of the keyframe's data, which the image owns) and
// the named regions (MEM_MAP's description or file name). Every byte of a
// mapped or written range is known; everything else is unknown.
//
// usercorn's tracer trims leading and trailing zero bytes of each mapping's
// data (Go bytes.Trim) but writes what is left at the mapping's start, so a
// mapping that began with zeros gets its data too low (docs/formats/usercorn.md §2.3).
// That cannot be undone; the image reproduces it (data at the op's address)
// and TrimWarnings() names mappings where it probably happened.
//
// Cost: O(log n) per op and per read, n = pieces; memory = the keyframe's
// data. Thread-safety: const methods may be called concurrently.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "backstep/core/trace_reader.h"

namespace backstep::core {

class UsercornImage {
 public:
  // [address, address + size) must not wrap (callers check); size > 0.
  // `permissions` ("r-x") and the file offset of `address` (file mappings)
  // are reported by Regions() for the parts of the mapping still in place.
  void Map(Address address, std::uint64_t size, std::string name, std::string permissions = {},
           std::optional<std::uint64_t> file_offset = std::nullopt);
  void Unmap(Address address, std::uint64_t size);
  void Write(Address address, std::span<const std::uint8_t> data);
  // Pairs a MEM_WRITE with the MEM_MAP just before it, for TrimWarnings().
  void NoteMapWrite(Address map_start, std::uint64_t map_size, std::string_view name,
                    Address write_start, std::uint64_t write_size);

  // TraceReader::ReadInitialMemory contract.
  void Read(Address address, std::span<std::uint8_t> out, std::span<std::uint8_t> known) const;
  // Named regions, by address; writes outside any mapping form unnamed ones.
  std::vector<MemoryRegion> Regions() const;
  std::uint64_t data_bytes() const { return blob_.size(); }

  // One message per mapping whose data probably landed too low: data written
  // at the mapping's start, shorter than the mapping, and either the mapping
  // is named like a stack or it holds `sp` above the data's end.
  std::vector<std::string> TrimWarnings(std::optional<Address> sp) const;

 private:
  static constexpr std::uint64_t kZero = ~std::uint64_t{0};
  struct Piece {
    Address last;         // inclusive
    std::uint64_t value;  // content: blob offset at the piece's start, or kZero; regions: name
  };
  using Pieces = std::map<Address, Piece>;
  static void Erase(Pieces& pieces, Address first, Address last, bool shift);
  struct MapWrite {
    Address map_start;
    std::uint64_t map_size;
    std::string name;
    Address write_start;
    std::uint64_t write_size;
  };

  Pieces content_;
  Pieces regions_;
  std::vector<std::string> names_;
  struct MapAttributes {
    Address start = 0;  // of the MEM_MAP, for the offset of a piece left by an unmap
    std::string permissions;
    std::optional<std::uint64_t> file_offset;
  };
  std::vector<MapAttributes> attributes_;  // parallel to names_
  std::vector<std::uint8_t> blob_;
  std::vector<MapWrite> map_writes_;
};

}  // namespace backstep::core
