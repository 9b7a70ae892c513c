#include "recorder/session_start.h"

#include <utility>

#include "recorder/cpuid.h"
#include "recorder/vdso.h"

namespace backstep::record {

Traps EnableTraps(Tracee& tracee, bool trap_rdtsc, bool cpuid_faulting) {
  Traps traps;
  traps.rdtsc = trap_rdtsc;
  if (cpuid_faulting) traps.cpuid = EnableCpuidFaulting(tracee).ok();
  return traps;
}

core::Status ReadInitialState(Tracee& tracee, const CpuLayout& layout, bool hide_vdso,
                              AddressSpace* space, InitialState* out) {
  if (core::Status s = tracee.GetRegs(&out->regs); !s.ok()) return s;
  if (core::Status s = tracee.GetXState(&out->xstate); !s.ok()) return s;
  out->slots.resize(layout.count());
  layout.CollectGprs(out->regs, out->slots);
  layout.CollectFp(out->xstate, out->slots);
  core::Expected<std::vector<std::uint8_t>> auxv = tracee.ReadAuxv();
  if (!auxv.ok()) return auxv.status();
  out->auxv = std::move(*auxv);
  if (hide_vdso) {
    if (core::Status s = HideVdso(tracee, out->regs.rsp, &out->auxv); !s.ok()) return s;
  }
  return space->Init(tracee);
}

MappingContents ImageContents(Tracee& tracee) {
  return [&tracee](const Mapping& m, std::vector<std::uint8_t>* out) {
    out->assign(m.size, 0);
    // [vvar] cannot be read (and changes behind the program's back);
    // [vsyscall] is a fixed kernel page.
    if (m.name.rfind("[vvar", 0) != 0 && m.name != "[vsyscall]")
      tracee.ReadMemoryZeroFill(m.start, *out);
    return core::Status::Ok();
  };
}

core::Status StartSink(RecordingSink& sink, Tracee& tracee, const AddressSpace& space,
                       std::vector<std::uint8_t> auxv,
                       std::span<const core::RegisterWrite> registers, core::Address pc) {
  StartInfo start;
  start.pid = static_cast<std::uint64_t>(tracee.pid());
  start.executable = tracee.ExecutablePath();
  start.auxv = std::move(auxv);
  start.mappings = space.mappings();
  start.contents = ImageContents(tracee);
  start.registers = registers;
  start.pc = pc;
  return sink.OnStart(start);
}

}  // namespace backstep::record
