// RevenEventDecoder: decodes REVEN register values and events into
// canonical Events (docs/formats/reven.md §1.3).
//
//   event     := 0xFF 0xFF str8(description) diff     "other" event
//              | diff                                 instruction (first byte < 0xFF)
//   diff      := count_byte mem_entry{M'} reg_entry{R'} [diff if R or M == 0xF]
//   mem_entry := addr[PHY_SIZE] u8 len [len == 0xFF: size[PHY_SIZE]] bytes[len]
//   reg_entry := u8 id [id == 0xFF: u16 id] [bytes[size] unless id is an operation]
//
// The decoder is built once per machine: a table indexed by REVEN id holds
// each register's size and mapping (reven_registers.h), and each operation's
// canonical writes, converted in advance. Decoding an event then allocates
// nothing once the Event's vectors have grown: memory writes are spans into
// the mapped file, register values are copied into RegisterWrites.
//
// Thread-safety: immutable after Create(); Decode() is const and may run on
// several threads with distinct ByteReaders and Events.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "backstep/core/event.h"
#include "backstep/core/expected.h"
#include "formats/reven/reven_machine.h"
#include "formats/reven/reven_registers.h"
#include "util/byte_reader.h"

namespace backstep::core {

class RevenEventDecoder {
 public:
  // Builds the id table. Unsupported when an ADD/AND/OR operation targets a
  // register backstep converts (the operand would not fit the canonical
  // register). Appends the names of registers that map to nothing to
  // *unmapped. `file` must outlive the decoder.
  static Expected<RevenEventDecoder> Create(const RevenMachine& machine, const std::string& file,
                                            std::vector<std::string>* unmapped);

  // True if fstat receives operations (PANDA x87status/top): a register
  // file must hold a known fstat before those writes apply.
  bool needs_fstat_base() const { return needs_fstat_base_; }

  // Decodes a register set: `count` entries of { u16 id ; [u16 size when
  // `sized`] ; value }, every declared register exactly once (initial
  // registers, cache points). Appends canonical writes to *out. Errors name
  // `file` (the trace or its cache) and `section`.
  Status DecodeRegisterSet(ByteReader& r, std::uint64_t count, bool sized, const std::string& file,
                           std::string_view section, std::vector<RegisterWrite>* out) const;

  // Decodes the event at r's position into *event (which the caller has
  // cleared) and leaves r after it. `number` is the event's index, for
  // messages. Returns OutOfRange when the event is cut by the end of r's
  // data (the caller decides whether that ends a truncated trace), and
  // Corruption, naming the file, "events", the offset and the event, for
  // invalid bytes.
  Status Decode(ByteReader& r, std::uint64_t number, Event* event) const;

  // Classifies an "other" event's description: interrupt, exception or
  // marker.
  static EventKind Classify(std::string_view description);

 private:
  enum class SlotKind : std::uint8_t { kUndeclared, kRegister, kOperation };
  struct Slot {
    SlotKind kind = SlotKind::kUndeclared;
    std::uint16_t size = 0;   // kRegister: value bytes
    std::uint32_t first = 0;  // kRegister: index in names_; kOperation: in op_writes_
    std::uint32_t count = 0;  // kOperation: writes in op_writes_
    RevenRegisterMapping mapping;
  };

  RevenEventDecoder() = default;
  Status EventError(const ByteReader& r, std::uint64_t start, std::uint64_t number,
                    std::string_view what) const;
  Status Cut(std::uint64_t start, std::uint64_t number) const;
  Status DecodeDiff(ByteReader& r, std::uint64_t start, std::uint64_t number, Event* e) const;

  const std::string* file_ = nullptr;
  std::uint8_t phy_size_ = 8;
  bool needs_fstat_base_ = false;
  std::vector<Slot> slots_;               // indexed by REVEN id
  std::vector<RegisterWrite> op_writes_;  // canonical writes of each operation
  std::vector<std::string> names_;        // register names, for messages
};

}  // namespace backstep::core
