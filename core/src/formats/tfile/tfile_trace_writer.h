// TfileTraceWriter: the generic TraceWriter for tfile (`backstep convert
// --to tfile`), on top of TfileWriter. A plain conversion, not the exporter:
//
//   * every event becomes one frame of tracepoint 1 (`tp T1:0:E:0:0`, one
//     tracepoint at address 0: gdb's `tfind pc` compares tracepoint
//     addresses, so it finds nothing useful here; `backstep export`
//     (tfile_exporter.h) emits one tracepoint per pc, docs/protocol.md §9);
//   * the frame's R block holds the event's thread's full register state
//     after the event (the writer tracks it, honouring
//     kEventClearsRegisters), in the default layout
//     (kDefaultX86_64Features) with its tdesc; registers unknown at that
//     point are written as zeros and read back as known zeros (a tfile has
//     no unknown marker); registers outside gdb's set (cr3, MSRs...) are
//     dropped;
//   * its M blocks hold only the memory the event wrote (listed last write
//     first, so that TfileReader's first-block-wins rule yields the same
//     bytes); everything else a frame does not carry is unknown, because
//     every tfile frame clears memory: the initial image, earlier writes and
//     recorded reads are lost;
//   * thread ids are lost (a tfile has none): frames read back as thread 1;
//   * position 0 (the initial state) has no frame: it reads back as empty.
// Only X86_64() traces can be written (Unsupported otherwise).
//
// Thread-safety: one thread at a time.
#pragma once

#include <map>
#include <memory>
#include <string>

#include "backstep/core/trace_writer.h"
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
  std::string path_;
  std::unique_ptr<TfileWriter> writer_;
  std::map<std::uint64_t, RegisterFile> threads_;  // tracked registers per thread id
};

}  // namespace backstep::core
