// RevenTraceWriter: the generic TraceWriter for REVEN (`backstep convert
// --to reven`), on top of RevenWriter.
//
// What a converted trace declares (docs/formats/reven.md, "Writing"):
//   * PHY_SIZE 8; the header's regions, with the initial image read through
//     InitialMemoryFn (unknown bytes become 0). REVEN holds physical memory
//     reached through the trace's own page tables (cr3): a virtual-memory
//     source has neither, and is Unsupported (making them up would invent
//     memory and registers).
//   * Registers: every storage register of X86_64(), Bochs style
//     (RevenExportRegisters(): x87status holds TOP, no `top` register,
//     zmmN for the vector pieces), ids 41 and up (ids >= 0xff use the 3-byte
//     escape), declared only when known at position 0 (every register of
//     it, for zmmN): REVEN gives every declared register an initial value,
//     so an unknown one stays unknown by not being declared (named in the
//     tool info). An event setting an undeclared register is Unsupported.
//   * Operations 0..40, PANDA's set: rip += 1..15, eflags OR/AND of
//     CF PF AF ZF SF TF IF DF OF, rsp += +-2, 4, 8, 16.
//   * Static registers from header properties named cpuid_* ("0x28").
// Events: the writer tracks the register file; each register an event
// touches is written as one of the operations above when its new value
// allows, else as a SET of the full REVEN value (so canonical ADD/AND/OR
// that REVEN cannot express become SETs). Memory writes are copied as is;
// reads are dropped (REVEN does not record them). One thread only.
//
// Thread-safety: one thread at a time.
#pragma once

#include <memory>
#include <string>

#include "backstep/core/trace_writer.h"
#include "formats/reven/reven_writer.h"

namespace backstep::core {

class RevenTraceWriter final : public TraceWriter {
 public:
  explicit RevenTraceWriter(std::string path) : path_(std::move(path)) {}

  Status Begin(const TraceHeader& header,
               const std::vector<std::pair<ThreadId, RegisterFile>>& initial_registers,
               const InitialMemoryFn& initial_memory) override;
  Status Append(const Event& event) override;
  Status Finish() override;

 private:
  struct Touched {
    std::size_t index;        // in RevenExportRegisters()
    std::uint8_t before[64];  // REVEN value before the event
  };
  Status WriteInitialState(const InitialMemoryFn& initial_memory);
  void EmitRegister(const Touched& t);
  // Re-reads an emitted value the way the reader will, so the tracked file
  // matches what the trace says.
  void Normalize(std::size_t index, const std::uint8_t* value);

  std::string path_;
  std::unique_ptr<RevenWriter> writer_;
  std::unique_ptr<RegisterFile> regs_;  // tracked state
  ThreadId thread_;
  bool have_thread_ = false;
  std::vector<MemoryRegion> regions_;
  std::vector<int> export_of_;  // RegisterId -> index in RevenExportRegisters(), -1
  std::vector<bool> declared_;  // by index in RevenExportRegisters(): in the machine
  std::vector<Touched> touched_;
  std::vector<RegisterWrite> scratch_;
  std::uint64_t events_ = 0;
};

}  // namespace backstep::core
