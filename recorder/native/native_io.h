// Binary I/O the native engine's files share (native_log.h's log,
// snapshot.h's snapshots, spool_sink.h's spools): a little-endian Writer
// into memory, a bounds-checked Reader over memory or a file that keeps the
// first failure with its offset, and the atomic write of a whole file.
//
// Thread-safety: plain objects.
#pragma once

#include <cstdint>
#include <cstdio>
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

// Bounds-checked reads from one byte source, memory or an open file (the
// log and snapshots are read whole; a spool file, spool_sink.h, record by
// record); the first failure is kept with its offset.
class Reader {
 public:
  // Over `data`, which must outlive the reader; `name` names it in errors.
  Reader(const std::vector<std::uint8_t>& data, const std::string& name)
      : data_(data.data()), size_(data.size()), name_(name) {}
  // Over the `size` bytes of `file` from its current position.
  Reader(std::FILE* file, std::uint64_t size, const std::string& name)
      : file_(file), size_(size), name_(name) {}
  bool Raw(void* p, std::size_t n) {
    if (!ok_ || n > size_ - offset_) return Fail("truncated");
    if (n > 0) {  // p may be null when n is 0
      if (!file_) {
        std::memcpy(p, data_ + offset_, n);
      } else if (std::fread(p, 1, n, file_) != n) {
        return Fail("truncated");
      }
    }
    offset_ += n;
    return true;
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
  bool Fail(const std::string& why) {
    if (ok_) error_ = name_ + ": " + why + " at offset " + std::to_string(offset_);
    ok_ = false;
    return false;
  }
  bool ok() const { return ok_; }
  bool at_end() const { return offset_ == size_; }
  const std::string& error() const { return error_; }

 private:
  const std::uint8_t* data_ = nullptr;  // memory, or
  std::FILE* file_ = nullptr;           // a file
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
