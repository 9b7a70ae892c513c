// ServeOptionsFor (backstep/gdbstub/trace_target.h): the one place that
// decides what a trace is served with, so that `backstep serve` and the
// LLDB plugin show the same registers and load the program alike.
#include "backstep/core/arch.h"
#include "backstep/gdbstub/process_image.h"
#include "backstep/gdbstub/trace_target.h"

namespace backstep::gdbstub {
namespace {

// gdb's avx512 feature (k0-7, xmm16-31, ymm16-31h, zmm0-31h) when a thread
// starts with k0 known: the recorder writes the AVX-512 state only on
// machines that have it, and its registers are then known throughout.
std::uint32_t Features(const core::Trace& trace) {
  const core::ArchDescription& arch = trace.arch();
  if (&arch != &core::X86_64()) return 0;  // the architecture's default
  const core::RegisterId k0 = *arch.Find("k0");
  auto reader = trace.NewReader();
  if (!reader.ok()) return 0;
  for (const auto& [thread, regs] : (*reader)->InitialRegisters()) {
    if (regs.known(k0)) return core::kDefaultX86_64Features | core::kFeatureAvx512;
  }
  return 0;
}

}  // namespace

core::Expected<TraceTargetOptions> ServeOptionsFor(const core::Trace& trace,
                                                   const std::string& exe) {
  TraceTargetOptions options;
  options.features = Features(trace);
  auto auxv = RecordedAuxv(trace);
  if (auxv.ok()) {
    options.auxv = std::move(*auxv);
  } else if (!exe.empty()) {
    // No recorded auxv (REVEN, tfile): the debugger still needs AT_ENTRY
    // and AT_PHDR to relocate a PIE and find the dynamic linker's list.
    BACKSTEP_ASSIGN_OR_RETURN(options.auxv, SynthesizeAuxv(trace, exe));
  }
  options.exe_path = !exe.empty() ? exe : RecordedExecutablePath(trace, options.auxv);
  return options;
}

}  // namespace backstep::gdbstub
