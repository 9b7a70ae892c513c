// execve in the ptrace engine (ptrace_session.h): the process keeps its
// pid and the recording goes on in the new image, which the sink receives
// as a whole (RecordingSink::OnExec), as the first image at the start.
#include <utility>
#include <vector>

#include "backstep/core/hex.h"
#include "recorder/ptrace/ptrace_session.h"
#include "recorder/session_start.h"

namespace backstep::record {

core::Status PtraceSession::OnExec(core::Address pc, const Decoded& d) {
  const core::Address entry = *exec_entry_;
  exec_entry_.reset();
  const std::uint64_t syscall = regs_.rax;
  // An open /proc/PID/mem still reads the old address space.
  if (core::Status s = tracee_.ReopenMemory(); !s.ok()) return s;
  // The kernel clears CPUID faulting at exec (rdtsc faulting stays): set
  // the traps up again, as at the start.
  traps_ = EnableTraps(tracee_, options_.spawn.trap_rdtsc, options_.portable_cpuid);
  const std::vector<Mapping> old_mappings = space_.mappings();
  InitialState image;
  if (core::Status s = ReadInitialState(tracee_, layout_, options_.hide_vdso, &space_, &image);
      !s.ok())
    return s;
  if (image.regs.rip != entry) {
    return core::Status::IOError("after execve the program ran to " + core::HexU64(image.regs.rip) +
                                 " before the recorder saw its first instruction");
  }
  decoder_.Invalidate();
  regs_ = image.regs;
  xstate_ = std::move(image.xstate);
  slots_ = std::move(image.slots);
  last_pc_ = pc;
  ++result_.instructions;
  ++result_.syscalls;
  threads_.SinkFollowCurrent(sink_);
  sink_.OnInstruction({pc, d.size, {}, {}, {}});
  ExecRecord exec;
  exec.syscall = static_cast<std::uint32_t>(syscall);
  exec.executable = tracee_.ExecutablePath();
  exec.unmapped = old_mappings;
  exec.mappings = space_.mappings();
  exec.contents = ImageContents(tracee_);
  exec.registers = slots_;
  exec.pc = regs_.rip;
  return sink_.OnExec(exec);
}

}  // namespace backstep::record
