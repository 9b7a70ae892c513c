// One x64dbg trace block (type 0: an executed instruction), decoded in place
// from the mapped file, and its encoder.
//
// Layout (docs/formats/x64dbg.md §5.2): u8 type=0, u8 RC, u8 MC, u8 flags (bit 7 thread
// id present, bits 0-3 opcode length 1..15, bits 4-6 zero), [u32 tid],
// opcode, RC relative slot indexes, RC duint values, MC memory flags, MC duint
// addresses, MC duint old values, then one duint new value per entry whose
// flag bit 0 (unchanged) is clear.
//
// Thread-safety: plain functions; a block views the file it was parsed from.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "backstep/core/status.h"

namespace backstep::core {

struct X64dbgBlock {
  std::uint64_t offset = 0;  // of the type byte
  std::uint64_t end = 0;     // offset after the block
  bool thread_flag = false;  // flags bit 7
  bool has_thread = false;   // a thread id was read (bit 7, or the quirk)
  std::uint32_t thread = 0;
  std::span<const std::uint8_t> opcode;
  unsigned reg_count = 0;
  std::array<std::uint16_t, 255> slots{};  // absolute slot numbers, ascending
  const std::uint8_t* reg_values = nullptr;
  unsigned mem_count = 0;
  const std::uint8_t* mem_flags = nullptr;
  const std::uint8_t* addresses = nullptr;
  const std::uint8_t* old_values = nullptr;
  const std::uint8_t* new_values = nullptr;  // only for changed entries, in order
  bool full_dump = false;                    // every slot stored, all relative indexes 0

  bool changed(unsigned entry) const { return !(mem_flags[entry] & 1); }
};

// Decodes the block at `offset` of `file`. `force_thread` reads a thread id
// even when bit 7 is clear (x64dbg's thread-flag quirk, docs/formats/x64dbg.md §5.5).
// Corruption (naming `name` and the offset) for a block that is truncated,
// of another type, with reserved bits, opcode length 0 or a slot beyond
// `slot_count`.
Status ParseX64dbgBlock(std::span<const std::uint8_t> file, std::uint64_t offset, unsigned duint,
                        unsigned slot_count, bool force_thread, const std::string& name,
                        X64dbgBlock* out);

// Decodes the block at `offset` that follows `prev` (nullptr for the first
// block of the file or of a re-decoding from a full dump, which x64dbg always
// writes with bit 7 and a thread id), with x64dbg's thread-id rule (formats
// doc, "Thread ids"; TraceRecord.cpp): after a block with bit 7 that is not
// a full dump, the writer always stores a thread id, whatever bit 7 says;
// after a full dump with bit 7 it does only when the full dump was also a
// thread switch, which the file does not say: the block is parsed without
// one and, when that fails, with one.
Status ParseX64dbgNextBlock(std::span<const std::uint8_t> file, std::uint64_t offset,
                            unsigned duint, unsigned slot_count, const X64dbgBlock* prev,
                            const std::string& name, X64dbgBlock* out);

// Copies the block's register values into `dump` (REGDUMP words) and marks
// their slots known.
void ApplyX64dbgSlots(const X64dbgBlock& block, unsigned duint, std::span<std::uint8_t> dump,
                      std::span<std::uint8_t> known);

// Walks the blocks after one already parsed, keeping the REGDUMP they
// describe and the thread of each block (the reader's look-ahead, its
// initial scan and its resume points).
class X64dbgWalk {
 public:
  X64dbgWalk(std::span<const std::uint8_t> file, unsigned duint, unsigned slot_count,
             const std::string& name)
      : file_(file), duint_(duint), slot_count_(slot_count), name_(name) {}
  // Starts at `block` (of `thread`), `dump`/`known` being the REGDUMP with
  // its slots applied.
  void Start(const X64dbgBlock& block, std::uint64_t thread, std::span<const std::uint8_t> dump,
             std::span<const std::uint8_t> known);
  // Moves to the next block and applies its slots: false at the end of the
  // file or at a damaged block (status()).
  bool Next();
  const X64dbgBlock& block() const { return block_; }
  std::uint64_t thread() const { return thread_; }
  const std::vector<std::uint8_t>& dump() const { return dump_; }
  const std::vector<std::uint8_t>& known() const { return known_; }
  const Status& status() const { return status_; }

 private:
  std::span<const std::uint8_t> file_;
  unsigned duint_, slot_count_;
  const std::string& name_;
  X64dbgBlock block_, next_;
  std::uint64_t thread_ = 0;
  std::vector<std::uint8_t> dump_, known_;
  Status status_;
};

// A memory entry to encode: new_value is empty for an unchanged entry.
struct X64dbgEntry {
  std::uint64_t address = 0;
  std::uint64_t old_value = 0;
  std::optional<std::uint64_t> new_value;
};

// Appends one block. `thread_flag`: bit 7; `thread`: the thread id field
// (x64dbg writes one with bit 7 and on the block after a switch without
// it). `slots` ascending, `values` one per slot; at most 255 slots and 255
// entries; opcode 1..15 bytes.
void EncodeX64dbgBlock(unsigned duint, bool thread_flag, std::optional<std::uint32_t> thread,
                       std::span<const std::uint8_t> opcode, std::span<const std::uint16_t> slots,
                       std::span<const std::uint64_t> values, std::span<const X64dbgEntry> entries,
                       std::vector<std::uint8_t>* out);

// Little-endian duint at p.
inline std::uint64_t X64dbgWord(const std::uint8_t* p, unsigned duint) {
  std::uint64_t v = 0;
  for (unsigned i = 0; i < duint; ++i) v |= std::uint64_t(p[i]) << (8 * i);
  return v;
}

}  // namespace backstep::core
