#include "formats/tfile/tfile_trace_writer.h"

namespace backstep::core {

Status TfileTraceWriter::Begin(const TraceHeader& header,
                               const std::vector<std::pair<ThreadId, RegisterFile>>& initial,
                               const InitialMemoryFn&) {
  if (header.arch != &X86_64()) {
    return Status::Unsupported(
        path_ + ": tfile conversion supports x86-64 traces only (this one is " +
        std::string(header.arch ? header.arch->name() : "of no architecture") + ")");
  }
  TfileWriterOptions options;
  options.notes = "converted by backstep from a " + header.format + " trace";
  BACKSTEP_ASSIGN_OR_RETURN(writer_, TfileWriter::Create(path_, options));
  for (const auto& [tid, regs] : initial) threads_.insert_or_assign(tid.value, regs);
  TfileTracepoint tp;
  tp.number = 1;
  tp.cmd_strings = {"collect $regs"};
  return writer_->WriteDefinitions({}, {tp});
}

Status TfileTraceWriter::Append(const Event& event) {
  auto it = threads_.find(event.thread.value);
  if (it == threads_.end()) it = threads_.emplace(event.thread.value, RegisterFile(X86_64())).first;
  RegisterFile& regs = it->second;
  if (event.flags & kEventClearsRegisters) regs.Clear();
  for (const RegisterWrite& w : event.registers) regs.Apply(w);
  writer_->BeginFrame(1);
  writer_->AddRegisters(regs);
  // Last write first: the reader's first block wins where writes overlap.
  for (auto w = event.writes.rbegin(); w != event.writes.rend(); ++w) {
    writer_->AddMemory(w->address, w->data);
  }
  return writer_->EndFrame();
}

Status TfileTraceWriter::Finish() { return writer_->Finish(); }

}  // namespace backstep::core
