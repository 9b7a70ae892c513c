// Binary I/O the native engine's files share (native_log.h's log,
// snapshot.h's snapshots): a little-endian Writer
// into memory, a bounds-checked Reader over memory that keeps the first
// failure with its offset, and the atomic write of a whole file.
//
// Thread-safety: plain objects.
#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "backstep/core/expected.h"

namespace backstep::record {

class Writer {
 public:
  void U64(std::uint64_t v) { Raw(&v, 8); }
  void Raw(const void* p, std::size_t n) {
    const auto* b = static_cast<const std::uint8_t*>(p);
    out_.insert(out_.end(), b, b + n);
  }
  void Bytes(const std::vector<std::uint8_t>& v) {
    U64(v.size());
    Raw(v.data(), v.size());
  }
  void String(const std::string& s) {
    U64(s.size());
    Raw(s.data(), s.size());
  }
  const std::vector<std::uint8_t>& data() const { return out_; }

 private:
  std::vector<std::uint8_t> out_;
};

// Bounds-checked reads from bytes in memory (the log and snapshots are
// read whole); the first failure is kept with its offset.
class Reader {
 public:
  // Over `data`, which must outlive the reader; `name` names it in errors.
  Reader(const std::vector<std::uint8_t>& data, const std::string& name)
      : Reader(data.data(), data.size(), name) {}
  // Over `size` bytes at `data`, which must outlive the reader.
  Reader(const std::uint8_t* data, std::uint64_t size, const std::string& name)
      : data_(data), size_(size), name_(name) {}
  bool Raw(void* p, std::size_t n) {
    if (n == 0) return ok_;  // p may be null then
    const std::uint8_t* from = Take(n);
    if (from) std::memcpy(p, from, n);
    return from != nullptr;
  }
  // The next `n` bytes where they are (valid while the data is), or
  // nullptr when fewer are left (the reader has failed; check ok() when n
  // may be 0).
  const std::uint8_t* Take(std::size_t n) {
    if (!ok_ || n > size_ - offset_) {
      Fail("truncated");
      return nullptr;
    }
    const std::uint8_t* at = data_ + offset_;
    offset_ += n;
    return at;
  }
  std::uint64_t U64() {
    std::uint64_t v = 0;
    Raw(&v, 8);
    return v;
  }
  std::uint8_t U8() {
    std::uint8_t v = 0;
    Raw(&v, 1);
    return v;
  }
  // A count of `unit`-byte items that must fit in what is left.
  std::uint64_t Count(std::size_t unit) {
    const std::uint64_t n = U64();
    if (ok_ && n > (size_ - offset_) / unit) Fail("count " + std::to_string(n) + " too large");
    return ok_ ? n : 0;
  }
  void Bytes(std::vector<std::uint8_t>* v) {
    v->resize(Count(1));
    Raw(v->data(), v->size());
  }
  void String(std::string* s) {
    s->resize(Count(1));
    Raw(s->data(), s->size());
  }
  // Reads the file's 8-byte magic: false when it is not `magic` (a file
  // too short for it is not refused here: the reader has failed, and its
  // error says "truncated").
  bool Magic(const char (&magic)[8]) {
    char m[8] = {};
    Raw(m, sizeof m);
    return !ok_ || std::memcmp(m, magic, sizeof m) == 0;
  }
  bool Fail(const std::string& why) {
    if (ok_) error_ = name_ + ": " + why + " at offset " + std::to_string(offset_);
    ok_ = false;
    return false;
  }
  bool ok() const { return ok_; }
  bool at_end() const { return offset_ == size_; }
  std::uint64_t left() const { return size_ - offset_; }
  const std::string& error() const { return error_; }

 private:
  const std::uint8_t* data_ = nullptr;
  std::uint64_t size_ = 0, offset_ = 0;
  const std::string name_;
  bool ok_ = true;
  std::string error_;
};

// Writes `data` to a temporary file next to `path` and renames it into
// place; `what` names the file in the error ("the native log").
core::Status WriteFileAtomically(const std::string& path, const std::vector<std::uint8_t>& data,
                                 const std::string& what);

// The whole file, or NotFound naming `what`.
core::Expected<std::vector<std::uint8_t>> ReadWholeFile(const std::string& path,
                                                        const std::string& what);

}  // namespace backstep::record
