// X64dbgReader: reads x64dbg trace files (`.trace64`; `.trace32` once the
// i386 table exists) as backstep events. docs/formats/x64dbg.md has the
// byte layout and every decision below.
//
// A block holds the registers *before* its instruction, so the reader looks
// one block ahead: the event of block k (thread T) carries the slots stored
// in block k+1 when block k+1 is on T too. The reader keeps the dump
// (REGDUMP) that x64dbg's delta encoding describes: x64dbg encodes block k+1
// against block k whatever their threads, so every slot not stored is the
// previous block's value.
//   * Thread switch (block k+1 on U != T): block k's event clears T's
//     registers (T's state after it is not in the file) and a marker event
//     "thread switch" on U, also clearing, then sets every register the dump
//     knows (U's state before block k+1). The last block's event clears its
//     thread's registers too (the file ends before the state after it).
//     So positions are blocks plus thread switches.
//   * Registers are known from block 0 on, for the slots it stores; a full
//     dump (every slot) makes every mapped register known.
//   * Memory: each entry covers one duint window. Its old value is a read
//     (state before the instruction), its new value, when the entry changed,
//     a write. The opcode bytes are a read at the pc. For PUSH/CALL, x64dbg
//     moves the last entry to the new stack slot but read its old value
//     elsewhere: that old value is not reported. Entries whose window wraps
//     around the address space are dropped.
//   * Thread ids: a block without bit 7 runs on the previous block's thread
//     (the first block, ThreadId(1), until an id appears). x64dbg's
//     thread-flag quirk is handled: after a block with bit 7 that is not a
//     full dump, a block that does not parse without a thread id is parsed
//     with one.
//
// Resume: ReaderPosition{offset of the next block, aux = offset of the last
// full dump at or before it (or of the first block) | bit 63 when the thread
// switch marker before the block is still due}. Seek() re-decodes from that
// full dump (at most 512 blocks in x64dbg's files; from the first block in a
// file without full dumps). ResumePoints() are the full dumps (at most 256,
// evenly spread; none beyond 64 threads), found by one walk over the block
// headers (no events decoded: ~1/4 of a decoding pass), used by the
// parallel index build; each holds the dump's registers for its thread
// (all known) and cleared registers for every other thread seen.
//
// Header: records_reads, no declared event count, virtual addresses, no
// initial memory; properties: x64dbg's arch, hash and debuggee path.
//
// Thread-safety: one thread at a time; the ByteSource may be shared.
#pragma once

#include <memory>
#include <string_view>
#include <vector>

#include "backstep/core/trace_reader.h"
#include "formats/x64dbg/x64dbg_block.h"
#include "formats/x64dbg/x64dbg_regdump.h"

namespace backstep::core {

class X64dbgReader final : public TraceReader {
 public:
  // The registry entry (formats/format_entry.h).
  static constexpr std::string_view kFormatName = "x64dbg";
  static constexpr std::string_view kFormatDescription =
      "x64dbg trace (.trace64 x86-64, .trace32 i386)";
  static bool Sniff(std::span<const std::uint8_t> head);

  // Reads the header and the first block. Corruption for a damaged file,
  // Unsupported for a valid header this reader cannot serve.
  static Expected<std::unique_ptr<X64dbgReader>> Open(std::shared_ptr<const ByteSource> source);

  const TraceHeader& header() const override { return header_; }
  const ByteSource& source() const override { return *source_; }
  std::vector<std::pair<ThreadId, RegisterFile>> InitialRegisters() const override;
  void ReadInitialMemory(Address address, std::span<std::uint8_t> out,
                         std::span<std::uint8_t> known) const override;
  ReaderPosition Tell() const override;
  Status Seek(const ReaderPosition& pos) override;
  Expected<bool> Next(Event* event) override;
  std::vector<ResumePoint> ResumePoints() const override;

  const X64dbgDumpLayout& layout() const { return *layout_; }

 private:
  X64dbgReader(std::shared_ptr<const ByteSource> source, const X64dbgDumpLayout* layout)
      : source_(std::move(source)), layout_(layout), data_(source_->data()) {}
  // Parses the block at `offset` (following `prev`, or the first block),
  // applies its slots to the dump and makes it the current block.
  Status Enter(std::uint64_t offset, const X64dbgBlock* prev);
  void ResetState();
  std::optional<std::uint64_t> DumpWord(RegisterId reg) const;

  std::shared_ptr<const ByteSource> source_;
  const X64dbgDumpLayout* layout_;
  std::span<const std::uint8_t> data_;
  TraceHeader header_;
  std::uint64_t first_block_ = 0;
  ThreadId initial_thread_{1};
  std::vector<RegisterWrite> initial_;

  // Decoding state: the current block (the next to emit) is entered.
  std::vector<std::uint8_t> dump_, slot_known_;
  X64dbgBlock block_, next_;
  bool at_end_ = false;
  ThreadId thread_{1};
  bool marker_pending_ = false;
  std::uint64_t anchor_ = 0;
  std::vector<std::uint16_t> changed_;
};

}  // namespace backstep::core
