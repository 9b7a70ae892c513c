#include "trace_target/trace_target.h"

#include <algorithm>
#include <cassert>

#include "trace_target/first_position.h"
#include "trace_target/unfilled_memory.h"

namespace backstep::gdbstub {

core::Expected<std::unique_ptr<Target>> NewTraceTarget(std::shared_ptr<const core::Trace> trace,
                                                       TraceTargetOptions options) {
  BACKSTEP_ASSIGN_OR_RETURN(std::unique_ptr<TraceTarget> target,
                            TraceTarget::Create(std::move(trace), std::move(options)));
  return std::unique_ptr<Target>(std::move(target));
}

TraceController* AsTraceController(Target& target) {
  return dynamic_cast<TraceController*>(&target);
}

core::Expected<std::unique_ptr<TraceTarget>> TraceTarget::Create(
    std::shared_ptr<const core::Trace> trace, TraceTargetOptions options) {
  BACKSTEP_ASSIGN_OR_RETURN(std::unique_ptr<core::Cursor> cursor, trace->NewCursor());
  BACKSTEP_ASSIGN_OR_RETURN(core::Position first, FirstPositionWithPc(*trace, *cursor));
  BACKSTEP_ASSIGN_OR_RETURN(core::Position last, LastPositionWithPc(*trace, *cursor, first));
  BACKSTEP_RETURN_IF_ERROR(cursor->Seek(first));
  return std::unique_ptr<TraceTarget>(
      new TraceTarget(std::move(trace), std::move(options), std::move(cursor), first, last));
}

TraceTarget::TraceTarget(std::shared_ptr<const core::Trace> trace, TraceTargetOptions options,
                         std::unique_ptr<core::Cursor> cursor, core::Position first_position,
                         core::Position last_position)
    : trace_(std::move(trace)),
      options_(std::move(options)),
      cursor_(std::move(cursor)),
      first_position_(first_position),
      last_position_(last_position) {
  const core::ArchDescription& arch = trace_->arch();
  if (options_.features == 0) options_.features = core::DefaultGdbFeatures(arch);
  slots_ = arch.GdbLayout(options_.features);
  // NOTE: the session numbers registers 0..count-1 in `g` order; gdb's
  // amd64 and i386 feature sets keep regnums dense, which GdbLayout
  // preserves.
  for (std::size_t i = 0; i < slots_.size(); ++i) {
    assert(slots_[i].regnum == static_cast<int>(i));
  }
  // Expedited: every general register up to the pc and the flags (amd64:
  // rax..r15, rip, eflags; i386: eax..edi, eip, eflags), so that neither gdb
  // nor LLDB needs a `g` or `p` to compute the frame after a stop.
  int last_expedited = -1;
  for (core::RegisterId reg : {arch.fp(), arch.sp(), arch.pc(), arch.flags()}) {
    if (reg != core::kNoRegister)
      last_expedited = std::max(last_expedited, arch.info(reg).gdb_regnum);
  }
  for (int regnum = 0; regnum <= last_expedited && regnum < static_cast<int>(slots_.size());
       ++regnum) {
    expedited_.push_back(regnum);
  }
  if (arch.pc() != core::kNoRegister && arch.info(arch.pc()).gdb_regnum >= 0) {
    pc_regnum_ = arch.info(arch.pc()).gdb_regnum;
  }
  documents_ = arch.TargetXml(options_.features);
  // NOTE: every trace backstep reads is a little-endian x86 program, and
  // x86 watchpoints trap after the access.
  triple_ = std::string(arch.naming().triple_cpu) + "-pc-linux-gnu";
  host_info_ = HostInfo{triple_, arch.pointer_size(), "linux", true, true};
  mappings_ = std::make_unique<core::MappingTimeline>(trace_);
  process_files_ = std::make_unique<ProcessFiles>(
      trace_, mappings_.get(),
      ProcessFiles::Process{pid(), options_.exe_path, options_.sysroot, options_.auxv},
      ProcessFiles::Now{[this] { return view().position(); }, [this] { return ThreadsHere(); }});
}

// ---- Registers

RegisterLayout TraceTarget::register_layout() {
  return RegisterLayout{static_cast<int>(slots_.size()), pc_regnum_,
                        std::span<const int>(expedited_)};
}

core::Expected<RegisterValue> TraceTarget::ReadRegister(core::ThreadId thread, int regnum) {
  if (regnum < 0 || regnum >= static_cast<int>(slots_.size())) {
    return core::Status::NotFound("no register " + std::to_string(regnum));
  }
  const core::GdbSlot& slot = slots_[regnum];
  BACKSTEP_ASSIGN_OR_RETURN(const core::RegisterFile* file, view().Registers(thread));
  RegisterValue value = RegisterValue::Unknown(slot.size);
  if (file->Read(slot.reg, std::span<std::uint8_t>(value.bytes.data(), slot.size))) {
    value.known = slot.size == RegisterValue::kMaxSize ? ~std::uint64_t{0}
                                                       : (std::uint64_t{1} << slot.size) - 1;
  }
  return value;
}

// ---- Memory

std::size_t TraceTarget::ReadMemory(core::Address addr, std::span<std::uint8_t> out) {
  if (known_.size() < out.size()) known_.resize(out.size());
  std::span<std::uint8_t> known = std::span<std::uint8_t>(known_).first(out.size());
  core::Status status = view().ReadMemory(addr, out, known, core::AddressKind::kVirtual);
  if (!status.ok()) return 0;  // no translation possible: nothing is readable
  if (std::find(known.begin(), known.end(), 0) != known.end()) {
    // Never-written bytes of a mapping whose zero fill the trace leaves out.
    auto maps = mappings_->At(view().position());
    if (maps.ok()) FillUnfilledMappings(*maps, addr, out, known);
  }
  return static_cast<std::size_t>(std::find(known.begin(), known.end(), 0) - known.begin());
}

// ---- Threads

// NOTE: every thread of the trace, at every position (issue 10): a thread
// whose first event is still ahead is listed with its registers unknown
// (gdb shows them <unavailable>), so `info threads` and `thread N` work
// anywhere and a thread that appears later is not reported as new.
const std::vector<core::ThreadId>& TraceTarget::ThreadsHere() {
  if (threads_.empty()) {
    threads_ = trace_->threads();
    std::sort(threads_.begin(), threads_.end());
  }
  return threads_;
}

std::vector<ThreadInfo> TraceTarget::Threads() {
  std::vector<ThreadInfo> out;
  for (core::ThreadId id : ThreadsHere()) out.push_back(ThreadInfo{id, "", std::nullopt});
  return out;
}

bool TraceTarget::HasThread(core::ThreadId thread) {
  const std::vector<core::ThreadId>& threads = ThreadsHere();  // sorted
  return std::binary_search(threads.begin(), threads.end(), thread);
}

core::ThreadId TraceTarget::current_thread() {
  if (!frame_cursor_active_ && stop_thread_ && HasThread(*stop_thread_)) return *stop_thread_;
  // NOTE: the thread of the next event, unless that event creates it (its
  // pc is still unknown): then one that has a pc, so that a goto to a
  // thread's creation shows no made-up pc (LLDB fills unknown bytes with
  // 0xcc) and a reverse step from there steps a real thread.
  const core::ThreadId next = view().current_thread();
  if (view().Pc(next)) return next;
  for (core::ThreadId thread : ThreadsHere()) {
    if (view().Pc(thread)) return thread;
  }
  return next;
}

// ---- Documents

std::optional<std::string_view> TraceTarget::TargetDescription(std::string_view annex) {
  for (const auto& [name, xml] : documents_) {
    if (name == annex) return std::string_view(xml);
  }
  return std::nullopt;
}

// ---- Breakpoints and watchpoints

core::Status TraceTarget::InsertBreakpoint(BreakpointType type, core::Address addr, std::uint64_t) {
  stop_points_.InsertBreakpoint(type, addr);
  return core::Status::Ok();
}

core::Status TraceTarget::RemoveBreakpoint(BreakpointType type, core::Address addr, std::uint64_t) {
  stop_points_.RemoveBreakpoint(type, addr);
  return core::Status::Ok();
}

bool TraceTarget::Supports(WatchKind kind) const {
  return kind == WatchKind::kWrite || trace_->header().records_reads;
}

core::Status TraceTarget::InsertWatchpoint(WatchKind kind, core::Address addr,
                                           std::uint64_t length) {
  // Refused here rather than at the next continue: gdb reports it at once.
  BACKSTEP_RETURN_IF_ERROR(core::CheckRange(*trace_, addr, length));
  return stop_points_.InsertWatchpoint(kind, addr, length);
}

core::Status TraceTarget::RemoveWatchpoint(WatchKind kind, core::Address addr,
                                           std::uint64_t length) {
  stop_points_.RemoveWatchpoint(kind, addr, length);
  return core::Status::Ok();
}

}  // namespace backstep::gdbstub
