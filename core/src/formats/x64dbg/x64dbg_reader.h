// X64dbgReader: reads x64dbg trace files (`.trace64`; `.trace32` once the
// i386 table exists) as backstep events. docs/formats/x64dbg.md has the
// byte layout and every decision below.
//
// Positions are x64dbg's own (TraceFileReader.cpp counts one index per
// block): event k is block k's instruction, so a user goes from x64dbg's
// trace view to the same index here. A block holds the registers *before*
// its instruction, and x64dbg encodes block k+1 against block k whatever
// their threads (TraceRecord.cpp), so the reader keeps that one REGDUMP and
// looks ahead:
//   * Block k+1 on the same thread T: the event of block k sets the
//     registers of the slots block k+1 stores.
//   * Thread switch (block k+1 on U != T): a suspended thread's registers
//     do not change, so T's state after block k is the REGDUMP at T's next
//     block, looked up at most kX64dbgLookahead blocks ahead; the event
//     clears T's registers and sets those (none when T does not run again
//     within reach). U's registers at position k+1 were set the same way by
//     U's previous event, or are its initial registers. The first event of
//     a thread after a switch also sets every register the REGDUMP knows
//     (so a thread whose previous state was out of reach recovers).
//   * Last block: a block lists the slots that differ between before(k)
//     and before(k+1) (or before(k-1) and before(k)); without bit 7 (no
//     switch), every slot it does not list is known and unchanged after
//     it; the listed ones (rip among them) become unknown. With bit 7 the
//     next thread is not named: the thread's registers become unknown.
//   * Registers are known from block 0 on, for the slots it stores; a full
//     dump (every slot) makes every mapped register known.
//   * Memory: each entry covers one duint window. Its old value is a read
//     (state before the instruction), its new value, when the entry changed,
//     a write. The opcode bytes are a read at the pc. For PUSH/CALL, x64dbg
//     moves the last entry to the new stack slot but read its old value
//     elsewhere: that old value is not reported, and the entry is a write of
//     its value after the instruction (new, or old when bit 0 says it did
//     not change: x64dbg re-read the slot after the push). Entries whose
//     window wraps around the address space are dropped.
//   * Thread ids: a block without a thread id runs on the previous block's
//     thread (the first block, ThreadId(1), until an id appears); the id a
//     block stores is its own thread's. x64dbg's thread-flag quirk is read
//     as the writer writes it (ParseX64dbgNextBlock).
//
// Initial registers: per thread whose first block is within
// kX64dbgLookahead blocks of the start, the REGDUMP at that block.
//
// Resume: ReaderPosition{offset of the next block, aux = offset of the last
// full dump at or before it (or of the first block) | bit 63 when the block
// is the first of its thread after a switch}. Seek() re-decodes from that
// full dump (at most 512 blocks in x64dbg's files; from the first block in a
// file without full dumps). ResumePoints() are the full dumps (at most 256,
// evenly spread; none beyond 64 threads), found by one walk over the blocks
// keeping the REGDUMP (no events decoded), used by the parallel index
// build; each holds the registers of every thread known there, as the
// sequential replay has them (x64dbg_resume_points.cc).
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
  // ReaderPosition::aux: the block is its thread's first after a switch.
  static constexpr std::uint64_t kSwitchedInBit = std::uint64_t{1} << 63;

  X64dbgReader(std::shared_ptr<const ByteSource> source, const X64dbgDumpLayout* layout)
      : source_(std::move(source)), layout_(layout), data_(source_->data()) {}
  // Parses the block at `offset` (following `prev`, or the first block),
  // applies its slots to the dump and makes it the current block.
  Status Enter(std::uint64_t offset, const X64dbgBlock* prev);
  void ResetState();
  void ScanInitialThreads();
  std::optional<std::uint64_t> DumpWord(RegisterId reg) const;
  // Appends the registers of `thread` at its next block after the current
  // one (within kX64dbgLookahead blocks), if any.
  void LookAhead(ThreadId thread, std::vector<RegisterWrite>* out);

  std::shared_ptr<const ByteSource> source_;
  const X64dbgDumpLayout* layout_;
  std::span<const std::uint8_t> data_;
  TraceHeader header_;
  std::uint64_t first_block_ = 0;
  std::vector<std::pair<ThreadId, RegisterFile>> initial_;

  // Decoding state: the current block (the next to emit) is entered.
  std::vector<std::uint8_t> dump_, slot_known_;
  X64dbgBlock block_, next_;
  bool at_end_ = false;
  ThreadId thread_{1};
  bool switched_in_ = false;  // the current block is its thread's first after a switch
  std::uint64_t anchor_ = 0;
  std::vector<std::uint16_t> changed_;
  // Look-ahead scratch.
  std::vector<std::uint8_t> ahead_known_;
};

}  // namespace backstep::core
