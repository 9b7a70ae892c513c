// PartSink: where one part of a parallel index build writes (see
// index_part_builder.h), before RelocatePart() patches it and the merge
// appends it to the index.
//
// Two kinds: MemoryPartSink (a vector; for in-memory indexes and tests) and
// the file part sink FileIndexSink::NewPartSink() makes: an unnamed
// temporary file (O_TMPFILE, else a name unlinked at once) in the index's
// directory, so that the parts of a large index take disk, not memory, and
// vanish with the process. Bytes() maps it shared and writable.
//
// Neither hashes: the merged index hashes the bytes as they are appended.
//
// Thread-safety: one thread at a time per sink.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "index/index_sink.h"

namespace backstep::core {

class PartSink : public IndexSink {
 public:
  PartSink() : IndexSink(false) {}
  // Everything written, writable in place. Valid until the sink is
  // destroyed; nothing may be written after. Errors: the write's or the
  // mapping's IOError.
  virtual Expected<std::span<std::uint8_t>> Bytes() = 0;
};

class MemoryPartSink final : public PartSink {
 public:
  Status status() const override { return Status::Ok(); }
  Expected<std::span<std::uint8_t>> Bytes() override { return std::span<std::uint8_t>(bytes_); }

 private:
  void DoWrite(std::span<const std::uint8_t> b) override {
    bytes_.insert(bytes_.end(), b.begin(), b.end());
  }
  std::vector<std::uint8_t> bytes_;
};

// A part sink in an unnamed temporary file in `directory`. IOError naming
// the directory when it cannot be created.
Expected<std::unique_ptr<PartSink>> NewFilePartSink(const std::string& directory);

}  // namespace backstep::core
