// Small REVEN fixtures for tests and fuzz seeds: a byte builder for
// hand-made files (independent of RevenWriter, so a writer/reader pair that
// share a misunderstanding cannot pass), a small valid trace that exercises
// every event feature, and a replay helper.
//
// Thread-safety: value types and pure functions.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "backstep/core/event.h"
#include "backstep/core/expected.h"
#include "backstep/core/register_file.h"
#include "backstep/core/trace_reader.h"

namespace backstep::core::testing {

// Little-endian byte builder.
class RevenBytes {
 public:
  RevenBytes& U8(std::uint64_t v) { return Le(v, 1); }
  RevenBytes& U16(std::uint64_t v) { return Le(v, 2); }
  RevenBytes& U32(std::uint64_t v) { return Le(v, 4); }
  RevenBytes& U64(std::uint64_t v) { return Le(v, 8); }
  RevenBytes& Le(std::uint64_t v, int n) {
    for (int i = 0; i < n; ++i)
      bytes_.push_back(i < 8 ? static_cast<std::uint8_t>(v >> (8 * i)) : 0);
    return *this;
  }
  RevenBytes& Str(std::string_view s) {
    bytes_.insert(bytes_.end(), s.begin(), s.end());
    return *this;
  }
  // u8 length + chars.
  RevenBytes& Str8(std::string_view s) { return U8(s.size()).Str(s); }
  RevenBytes& Fill(std::size_t n, std::uint8_t b = 0) {
    bytes_.insert(bytes_.end(), n, b);
    return *this;
  }
  // Opens a section (u64 size placeholder); returns the offset to close.
  std::size_t Begin() {
    const std::size_t at = bytes_.size();
    U64(0);
    return at;
  }
  // Patches the size of the section opened at `at`.
  RevenBytes& End(std::size_t at) {
    const std::uint64_t size = bytes_.size() - at - 8;
    for (int i = 0; i < 8; ++i) bytes_[at + i] = static_cast<std::uint8_t>(size >> (8 * i));
    return *this;
  }
  std::size_t size() const { return bytes_.size(); }
  std::vector<std::uint8_t>& bytes() { return bytes_; }

 private:
  std::vector<std::uint8_t> bytes_;
};

// Hand-built binresource metadata: magic (+ version when >= 1), type,
// strings padded to capacity, date.
void AppendHandMetadata(RevenBytes& b, std::uint32_t metadata_version = 1, std::uint32_t type = 1,
                        std::string_view format_version = "1.0.1");

// A small valid trace (a few KiB, most of it metadata) exercising every
// event feature: two regions, PHY_SIZE 2, a register with id 0x101 (3-byte
// escape), an unmapped register, operations of each operator, "other"
// events, memory- and register-triggered continuations, a 300-byte write
// (length escape), a write outside the regions. `patch_event_count` false:
// event_count 0 (scanned).
std::vector<std::uint8_t> SmallRevenTrace(bool patch_event_count = true);

// A small trace of a producer's own machine (reven_machines.h): PANDA's
// (`panda`) or Bochs', one 256-byte region, a few events using the
// producer's operations and x87 registers.
std::vector<std::uint8_t> SmallProducerTrace(bool panda);

// A canonical rendering of an event, for comparisons.
std::string DescribeEvent(const Event& e);

// Full sequential replay of a reader from its current position.
struct RevenReplay {
  std::vector<std::pair<ThreadId, RegisterFile>> registers;  // at the end
  std::map<Address, std::uint8_t> written;                   // bytes written by events
  std::uint64_t events = 0;
  std::vector<std::string> described;  // DescribeEvent of each event, when asked
};
Expected<RevenReplay> ReplayReader(TraceReader& reader, bool describe = false,
                                   std::uint64_t max_events = ~std::uint64_t{0});

}  // namespace backstep::core::testing
