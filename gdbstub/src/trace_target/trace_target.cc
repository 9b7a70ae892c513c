#include "trace_target/trace_target.h"

#include <algorithm>
#include <cassert>

#include "trace_target/first_position.h"

namespace backstep::gdbstub {

core::Expected<std::unique_ptr<Target>> NewTraceTarget(std::shared_ptr<const core::Trace> trace,
                                                       TraceTargetOptions options) {
  BACKSTEP_ASSIGN_OR_RETURN(std::unique_ptr<TraceTarget> target,
                            TraceTarget::Create(std::move(trace), std::move(options)));
  return std::unique_ptr<Target>(std::move(target));
}

TraceController* AsTraceController(Target& target) {
  auto* trace_target = dynamic_cast<TraceTarget*>(&target);
  return trace_target ? &trace_target->armed_moves() : nullptr;
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
      served_(trace_, std::move(cursor), first_position, last_position),
      stop_points_(*trace_, options_.watch_only_changes),
      signal_stops_(*trace_, served_),
      images_(*trace_, signal_stops_, options_),
      armed_moves_(*trace_, served_, stop_points_, *this),
      frames_(*trace_, served_),
      monitor_(*this),
      memory_map_(trace_->mappings(), served_) {
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
  for (core::RegisterId reg : {arch.fp(), arch.sp(), arch.pc()}) {
    if (reg == core::kNoRegister) continue;
    const int regnum = arch.info(reg).gdb_regnum;
    if (regnum >= 0 && regnum < static_cast<int>(slots_.size())) frame_.push_back(regnum);
  }
  std::sort(frame_.begin(), frame_.end());
  if (arch.pc() != core::kNoRegister && arch.info(arch.pc()).gdb_regnum >= 0) {
    pc_regnum_ = arch.info(arch.pc()).gdb_regnum;
  }
  documents_ = arch.TargetXml(options_.features);
  // NOTE: every trace backstep reads is a little-endian x86 program, and
  // x86 watchpoints trap after the access.
  triple_ = std::string(arch.naming().triple_cpu) + "-pc-linux-gnu";
  host_info_ = HostInfo{triple_, arch.pointer_size(), "linux", true, true};
  process_files_ = std::make_unique<ProcessFiles>(
      trace_, &trace_->mappings(),
      ProcessFiles::Process{pid(), options_.exe_path, options_.sysroot, options_.auxv},
      ProcessFiles::Now{[this] { return served_.view().position(); },
                        [this] { return served_.threads(); },
                        [this] { return std::string(exec_file()); },
                        [this] {
                          const std::span<const std::uint8_t> now = auxv();
                          return std::vector<std::uint8_t>(now.begin(), now.end());
                        }});
}

// ---- Registers

RegisterLayout TraceTarget::register_layout() {
  return RegisterLayout{static_cast<int>(slots_.size()), pc_regnum_,
                        std::span<const int>(expedited_), std::span<const int>(frame_)};
}

core::Expected<RegisterValue> TraceTarget::ReadRegister(core::ThreadId thread, int regnum) {
  if (regnum < 0 || regnum >= static_cast<int>(slots_.size())) {
    return core::Status::NotFound("no register " + std::to_string(regnum));
  }
  const core::GdbSlot& slot = slots_[regnum];
  BACKSTEP_ASSIGN_OR_RETURN(const core::RegisterFile* file, served_.view().Registers(thread));
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
  core::Status status = served_.view().ReadMemory(addr, out, known, core::AddressKind::kVirtual);
  if (!status.ok()) return 0;  // no translation possible: nothing is readable
  // The cursor already read never-written bytes of unfilled mappings as
  // zeros (backstep/core/mappings.h), as every front end sees them.
  return static_cast<std::size_t>(std::find(known.begin(), known.end(), 0) - known.begin());
}

// ---- Threads

std::vector<ThreadInfo> TraceTarget::Threads() {
  std::vector<ThreadInfo> out;
  for (core::ThreadId id : served_.threads()) out.push_back(ThreadInfo{id, "", std::nullopt});
  return out;
}

// ---- Documents

std::optional<std::string_view> TraceTarget::TargetDescription(std::string_view annex) {
  for (const auto& [name, xml] : documents_) {
    if (name == annex) return std::string_view(xml);
  }
  return std::nullopt;
}

// ---- Extended mode

core::Status TraceTarget::Restart() {
  armed_moves_.Reset();
  served_.DeselectFrame();
  return MoveTo(served_.first(), std::nullopt);
}

}  // namespace backstep::gdbstub
