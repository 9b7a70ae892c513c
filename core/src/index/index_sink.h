// IndexSink: where the index builder writes, hashing as it goes.
//
// The builder writes the file front to back, once; every byte passes through
// Write(), which updates the running checksum (index_hash.h) that the footer
// records. Two sinks: FileIndexSink (an AtomicFile: temp file + rename on
// Commit) and VectorIndexSink (in-memory traces and tests). The parallel
// build writes each part into a PartSink (index_part_sink.h) that the sink
// makes (NewPartSink: a temporary file beside the index, or memory), patches
// it and appends it.
//
// Thread-safety: one thread at a time per sink; part sinks are independent.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "index/index_hash.h"
#include "util/atomic_file.h"

namespace backstep::core {

class PartSink;

class IndexSink {
 public:
  // `hashing`: false for part sinks (their bytes are hashed when appended).
  explicit IndexSink(bool hashing = true) : hashing_(hashing) {}
  virtual ~IndexSink() = default;

  void Write(std::span<const std::uint8_t> bytes) {
    if (bytes.empty()) return;
    if (hashing_) hash_.Update(bytes);
    DoWrite(bytes);
    size_ += bytes.size();
  }
  template <class T>
  void WriteRecord(const T& record) {
    Write({reinterpret_cast<const std::uint8_t*>(&record), sizeof(T)});
  }
  template <class T>
  void WriteRecords(std::span<const T> records) {
    Write({reinterpret_cast<const std::uint8_t*>(records.data()), records.size_bytes()});
  }
  // Zero bytes up to the next multiple of 8 (records are 8-byte aligned).
  void Pad8() {
    static constexpr std::uint8_t kZeros[8] = {};
    if (size_ % 8) Write({kZeros, 8 - size_ % 8});
  }
  // Bytes written so far = offset of the next byte.
  std::uint64_t size() const { return size_; }
  // Hash of everything written so far.
  const Hash64& hash() const { return hash_; }
  // Writes without hashing (the footer's checksum field).
  void WriteUnhashed(std::span<const std::uint8_t> bytes) {
    DoWrite(bytes);
    size_ += bytes.size();
  }
  virtual Status status() const = 0;
  // A sink for one part of a parallel build (default: in memory).
  virtual Expected<std::unique_ptr<PartSink>> NewPartSink() const;

 protected:
  virtual void DoWrite(std::span<const std::uint8_t> bytes) = 0;

 private:
  bool hashing_;
  Hash64 hash_;
  std::uint64_t size_ = 0;
};

class VectorIndexSink final : public IndexSink {
 public:
  Status status() const override { return Status(); }
  std::vector<std::uint8_t>& bytes() { return bytes_; }

 private:
  void DoWrite(std::span<const std::uint8_t> b) override {
    bytes_.insert(bytes_.end(), b.begin(), b.end());
  }
  std::vector<std::uint8_t> bytes_;
};

class FileIndexSink final : public IndexSink {
 public:
  explicit FileIndexSink(AtomicFile file) : file_(std::move(file)) {}
  Status status() const override { return file_.status(); }
  Status Commit() { return file_.Commit(); }
  // A temporary file in the index's directory (never named: O_TMPFILE).
  Expected<std::unique_ptr<PartSink>> NewPartSink() const override;

 private:
  void DoWrite(std::span<const std::uint8_t> b) override { file_.Write(b); }
  AtomicFile file_;
};

}  // namespace backstep::core
