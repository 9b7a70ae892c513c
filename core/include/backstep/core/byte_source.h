// ByteSource: the only way core/ reads a file.
//
// A read-only, random-access view of a whole file: a memory mapping of a
// file on disk, or an in-memory buffer (tests, fuzzers). Readers keep a
// shared_ptr so views stay valid while any reader uses them.
//
// Thread-safety: immutable after construction; data() may be read from any
// thread.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "backstep/core/expected.h"

namespace backstep::core {

class ByteSource {
 public:
  virtual ~ByteSource() = default;
  // The whole content.
  virtual std::span<const std::uint8_t> data() const = 0;
  std::uint64_t size() const { return data().size(); }
  // The file name used in error messages ("<memory>" for buffers).
  virtual const std::string& name() const = 0;
};

// Maps `path` read-only. An empty file maps to an empty span.
Expected<std::shared_ptr<const ByteSource>> MapFile(const std::string& path);

// Wraps a buffer; `name` appears in error messages.
std::shared_ptr<const ByteSource> MemorySource(std::vector<std::uint8_t> bytes,
                                               std::string name = "<memory>");

}  // namespace backstep::core
