// X64dbgTraceWriter: the TraceWriter for x64dbg traces (`backstep convert
// --to x64dbg`, test fixtures). docs/formats/x64dbg.md, "Writing", has
// the rules; in short:
//   * Header {"ver":1,"arch":"x64",...} (x86-64 traces; i386 once backstep
//     has its table), virtual memory only (a physical REVEN trace is
//     Unsupported). A source whose header regions hold a known byte (a
//     recording's image) is Unsupported: x64dbg's reader knows memory only
//     where blocks touched it. The initial memory function still gives old
//     values (fixtures pass an image without regions).
//   * One block per instruction event, laid out as x64dbg's TraceRecord.cpp
//     writes it, so each block is written when the next instruction (or
//     Finish) gives the state after it: the REGDUMP before the instruction
//     (its thread's registers), a slot stored when it differs from the
//     REGDUMP before the next instruction (of whichever thread), or differed
//     from the previous block's, or is newly known; a full dump on blocks
//     0, 512, 1024, ... when every slot is known. Bit 7 and the thread id on
//     full dumps, on the first block and on the block before a switch; the
//     block after a switch (or after a first block that is not a full dump)
//     carries its thread id with bit 7 clear. A register cannot become
//     unknown again once a block stored it (Unsupported: "cannot forget").
//   * The opcode is the event's read at its pc (1..15 bytes); an instruction
//     without one is Unsupported (x64dbg blocks carry the opcode).
//   * Memory: one entry per duint window of each read and write; the old
//     value must be known (from the event's reads, earlier events or the
//     initial image), except for the stack slot of a PUSH/CALL, whose old
//     value x64dbg's reader does not trust (written as 0 where unknown).
//     An entry whose bytes do not change is "unchanged" (a read).
//   * Marker events without memory writes only update their thread's
//     registers; other non-instruction events
//     and memory clears are Unsupported. Thread ids must fit x64dbg's u32
//     and not be 0.
//
// Thread-safety: one thread at a time.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "backstep/core/trace_writer.h"
#include "formats/x64dbg/x64dbg_block.h"
#include "formats/x64dbg/x64dbg_regdump.h"
#include "util/atomic_file.h"

namespace backstep::core {

class X64dbgTraceWriter final : public TraceWriter {
 public:
  explicit X64dbgTraceWriter(std::string path) : path_(std::move(path)) {}

  Status Begin(const TraceHeader& header,
               const std::vector<std::pair<ThreadId, RegisterFile>>& initial_registers,
               const InitialMemoryFn& initial_memory) override;
  Status Append(const Event& event) override;
  Status Finish() override;

  std::uint64_t blocks_written() const { return blocks_; }

 private:
  RegisterFile& Thread(ThreadId thread);
  // The byte before the current event, if known.
  std::optional<std::uint8_t> OldByte(const Event& event, Address address) const;
  void Remember(const Event& event);
  // Writes the pending block; `next`: the next instruction's thread (none
  // after the last), whose registers are in dump_/known_.
  void Flush(std::optional<std::uint32_t> next);

  // The last instruction's block, written when the next one (or Finish)
  // gives the state after it.
  struct Pending {
    std::uint32_t thread = 0;
    std::vector<std::uint8_t> opcode;
    std::vector<X64dbgEntry> entries;
    std::vector<std::uint8_t> dump, known;  // REGDUMP before it
  };

  std::string path_;
  const X64dbgDumpLayout* layout_ = nullptr;
  std::optional<AtomicFile> file_;
  InitialMemoryFn image_;
  std::map<std::uint64_t, RegisterFile> regs_;
  std::unordered_map<Address, std::uint8_t> memory_;  // bytes known since the image
  std::vector<std::uint8_t> written_known_;           // per slot: a block stored it
  std::vector<std::uint8_t> changed_before_;  // per slot: differed between the last two blocks
  bool need_thread_ = true;                   // x64dbg's rtNeedThreadId
  std::optional<Pending> pending_;
  std::uint64_t events_ = 0, blocks_ = 0;
  std::vector<std::uint8_t> dump_, known_, block_;
};

}  // namespace backstep::core
