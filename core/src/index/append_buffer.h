// AppendBuffer: a growable byte array for the index builders' per-event
// appends (encoded access entries, pc postings).
//
// std::vector<std::uint8_t>::insert of a few bytes costs a library memmove
// call per append, and every growth copies the whole array. Here an append
// of a short head copies a fixed-size block (inlined, no call) into room
// reserved ahead, and growth is realloc (which moves large blocks by
// remapping, not copying). Bytes are never zero-filled.
//
// Contract: data() holds exactly the bytes appended, in order; size() is
// their count. Thread-safety: none (one builder, one thread).
#pragma once

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <new>
#include <span>
#include <utility>

namespace backstep::core {

class AppendBuffer {
 public:
  AppendBuffer() = default;
  AppendBuffer(AppendBuffer&& other) noexcept
      : data_(std::exchange(other.data_, nullptr)),
        size_(std::exchange(other.size_, 0)),
        capacity_(std::exchange(other.capacity_, 0)) {}
  AppendBuffer& operator=(AppendBuffer&& other) noexcept {
    if (this != &other) {
      std::free(data_);
      data_ = std::exchange(other.data_, nullptr);
      size_ = std::exchange(other.size_, 0);
      capacity_ = std::exchange(other.capacity_, 0);
    }
    return *this;
  }
  AppendBuffer(const AppendBuffer&) = delete;
  AppendBuffer& operator=(const AppendBuffer&) = delete;
  ~AppendBuffer() { std::free(data_); }

  std::size_t size() const { return size_; }
  const std::uint8_t* data() const { return data_; }
  std::span<const std::uint8_t> bytes() const { return {data_, size_}; }

  void Append(const std::uint8_t* bytes, std::size_t n) {
    if (n == 0) return;
    std::memcpy(Room(n), bytes, n);
    size_ += n;
  }
  // In-place appends: Reserve(n) returns room for at least n bytes after
  // size(); Commit(k) (k <= n, no other call in between) appends the k bytes
  // written there. Encoders write straight into the buffer: a head encoded
  // byte by byte on the stack and copied wider would stall the copy's load
  // (no store-to-load forwarding from narrower stores), once per entry.
  std::uint8_t* Reserve(std::size_t n) { return Room(n); }
  void Commit(std::size_t k) { size_ += k; }
  // Appends the first n bytes of `bytes` (n <= kMax). Up to 16 bytes, the
  // copy has a constant size (the array is readable that far), so the
  // compiler inlines it.
  template <std::size_t kMax>
  void AppendShort(const std::uint8_t (&bytes)[kMax], std::size_t n) {
    constexpr std::size_t kChunk = kMax < 16 ? kMax : 16;
    // Up to 16 bytes, n <= kMax == kChunk: no longer copy to consider.
    if constexpr (kMax > 16) {
      if (n > kChunk) return Append(bytes, n);
    }
    std::memcpy(Room(kChunk), bytes, kChunk);
    size_ += n;
  }

 private:
  // At least n writable bytes after size_.
  std::uint8_t* Room(std::size_t n) {
    if (capacity_ - size_ < n) Grow(n);
    return data_ + size_;
  }
  void Grow(std::size_t n) {
    std::size_t capacity = capacity_ < 64 ? 64 : capacity_ * 2;
    while (capacity - size_ < n) capacity *= 2;
    void* grown = std::realloc(data_, capacity);
    if (!grown) throw std::bad_alloc();
    data_ = static_cast<std::uint8_t*>(grown);
    capacity_ = capacity;
  }

  std::uint8_t* data_ = nullptr;
  std::size_t size_ = 0;
  std::size_t capacity_ = 0;
};

}  // namespace backstep::core
