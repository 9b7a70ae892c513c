// TfileTraceWriter: the generic TraceWriter for tfile (`backstep convert
// --to tfile`), on top of TfileWriter. A plain conversion, not the exporter
// (`backstep export`, tfile_exporter.h, lays a trace out for gdb's `target
// tfile`). A tfile frame is a snapshot: it knows what it collected and
// nothing else, and position 0 is before the first frame. So a trace
// converts only when each of its positions is such a snapshot, and what a
// tfile cannot hold is refused with one line (Unsupported):
//   * a known register or byte at position 0 (a tfile has no state before
//     its first frame);
//   * an event that keeps registers or memory of earlier events (every
//     frame forgets them: kEventClearsRegisters / kEventClearsMemory);
//   * a thread other than 1 (frames have no thread; they read back as 1);
//   * registers that are not the first ones of an R block layout, or that
//     differ from the first frame's: gdb makes every register of the R block
//     available and those past the R size unavailable
//     (tracefile-tfile.c, tfile_fetch_registers), and there is one R size
//     per file. The layout (features and R size) is chosen at the first
//     frame with registers: the known registers' features, the R size
//     ending after the last known one;
//   * registers outside gdb's set (cr3, MSRs...); non-x86-64 traces.
// Every event becomes one frame, with an R block when the frame knows
// registers and M blocks of the event's writes (listed last write first:
// TfileReader's first block wins). A tfile source (header.tracepoints) keeps
// its definitions, each frame its tracepoint (from TfileReader's description
// "tracepoint N, ...") and trace state variables, and a frame that knows
// only the pc gdb guesses from its tracepoint gets no R block, as in the
// source. Other sources' frames are of tracepoint 1 (two locations, 0 and 1,
// so that no pc is guessed for a frame without an R block).
//
// Thread-safety: one thread at a time.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "backstep/core/trace_writer.h"
#include "formats/tfile/tfile_definitions.h"
#include "formats/tfile/tfile_writer.h"

namespace backstep::core {

class TfileTraceWriter final : public TraceWriter {
 public:
  explicit TfileTraceWriter(std::string path) : path_(std::move(path)) {}

  Status Begin(const TraceHeader& header,
               const std::vector<std::pair<ThreadId, RegisterFile>>& initial_registers,
               const InitialMemoryFn& initial_memory) override;
  Status Append(const Event& event) override;
  Status Finish() override;

 private:
  // The pc gdb guesses for a frame of tracepoint `tpnum` without an R block
  // (the source's definitions).
  std::optional<Address> GuessedPc(std::uint32_t tpnum) const;
  // Creates the file and writes the definitions, with that layout.
  Status Open(std::uint32_t features, std::uint64_t block_size);
  // The layout for the known registers of regs_ (see above), then Open().
  Status ChooseLayout(const std::string& where);

  std::string path_;
  std::string notes_;
  TfileDefinitions source_;  // a tfile source's tracepoints and variables
  std::unique_ptr<TfileWriter> writer_;
  RegisterFile regs_{X86_64()};           // thread 1's registers, tracked
  std::vector<RegisterId> layout_known_;  // the registers of the R block
  bool memory_known_ = false;             // the last frame carried memory
  std::uint64_t events_ = 0;
};

}  // namespace backstep::core
