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
  // Maps in the pages of a file mapping that the page cache already holds,
  // so that reading them later takes no page fault: random reads of a large
  // trace otherwise fault in a few pages each, ~3-5 us apiece. Reads nothing
  // from the disk (pages not cached stay as they are) and changes no byte.
  // Costs page tables (2 MiB per GiB mapped) and ~20-30 ms per cached GiB.
  // Nothing for buffers, or on kernels before 5.14.
  virtual void MapInCachedPages() const {}
};

// Maps `path` read-only. An empty file maps to an empty span.
Expected<std::shared_ptr<const ByteSource>> MapFile(const std::string& path);

// Wraps a buffer; `name` appears in error messages.
std::shared_ptr<const ByteSource> MemorySource(std::vector<std::uint8_t> bytes,
                                               std::string name = "<memory>");

}  // namespace backstep::core
