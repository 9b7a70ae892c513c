// ByteReader: bounds-checked little-endian decoding of a byte span.
//
// Every read checks the remaining length first; on a short read the reader
// fails (ok() becomes false), stays failed, and returns zeros. Callers check
// ok() once after a group of reads and build a Corruption status with
// offset() for the message. Nothing here allocates.
//
// Thread-safety: a value type; not synchronized.
#pragma once

#include <cstdint>
#include <cstring>
#include <span>
#include <string_view>

namespace backstep::core {

class ByteReader {
 public:
  ByteReader() = default;
  explicit ByteReader(std::span<const std::uint8_t> data, std::uint64_t base_offset = 0)
      : data_(data), base_(base_offset) {}

  bool ok() const { return ok_; }
  // Offset of the next byte, counted from the start of the file (base_offset).
  std::uint64_t offset() const { return base_ + pos_; }
  std::size_t pos() const { return pos_; }
  std::size_t remaining() const { return data_.size() - pos_; }
  bool empty() const { return pos_ == data_.size(); }

  std::uint8_t U8() { return static_cast<std::uint8_t>(Le(1)); }
  std::uint16_t U16() { return static_cast<std::uint16_t>(Le(2)); }
  std::uint32_t U32() { return static_cast<std::uint32_t>(Le(4)); }
  std::uint64_t U64() { return Le(8); }
  // An unsigned little-endian integer of `n` bytes (0..8).
  std::uint64_t Le(std::size_t n) {
    if (!Need(n)) return 0;
    std::uint64_t v = 0;
    for (std::size_t i = 0; i < n; ++i) v |= std::uint64_t(data_[pos_ + i]) << (8 * i);
    pos_ += n;
    return v;
  }
  std::uint32_t U32BigEndian() {
    if (!Need(4)) return 0;
    std::uint32_t v = (std::uint32_t(data_[pos_]) << 24) | (std::uint32_t(data_[pos_ + 1]) << 16) |
                      (std::uint32_t(data_[pos_ + 2]) << 8) | std::uint32_t(data_[pos_ + 3]);
    pos_ += 4;
    return v;
  }
  // A view of the next `n` bytes (empty on failure).
  std::span<const std::uint8_t> Bytes(std::uint64_t n) {
    if (!Need(n)) return {};
    auto out = data_.subspan(pos_, static_cast<std::size_t>(n));
    pos_ += static_cast<std::size_t>(n);
    return out;
  }
  std::string_view String(std::uint64_t n) {
    auto b = Bytes(n);
    return {reinterpret_cast<const char*>(b.data()), b.size()};
  }
  void Skip(std::uint64_t n) { Bytes(n); }
  std::uint8_t PeekU8() const { return pos_ < data_.size() ? data_[pos_] : 0; }
  // Moves to `pos` (relative to the span). Fails past the end.
  void Seek(std::size_t pos) {
    if (pos > data_.size()) {
      ok_ = false;
      return;
    }
    pos_ = pos;
  }

 private:
  bool Need(std::uint64_t n) {
    if (!ok_ || n > data_.size() - pos_) {
      ok_ = false;
      return false;
    }
    return true;
  }

  std::span<const std::uint8_t> data_;
  std::uint64_t base_ = 0;
  std::size_t pos_ = 0;
  bool ok_ = true;
};

}  // namespace backstep::core
