// Start-up every engine shares: the program is spawned stopped before its
// first instruction (tracee.h, through SpawnAndRun in run_session.h), then
// an engine's Start():
//   1. EnableTraps(): CPUID faulting when asked for (cpuid.h), with rdtsc
//      faulting as Tracee::Spawn set it up: what the program's forked
//      children must lose (untraced.h);
//   2. ReadInitialState(): registers, x87/SSE/AVX state, the auxiliary
//      vector (with the vDSO hidden when asked: vdso.h) and the mappings
//      with the shadow of writable memory (address_space.h);
//   3. its own set-up (the emu engine: AT_RANDOM, Unicorn);
//   4. StartSink(): the sink's OnStart with the whole image, its contents
//      read from the tracee on demand ([vvar] and [vsyscall] as zeros).
//
// Thread-safety: one thread at a time (the tracee's).
#pragma once

#include <sys/user.h>

#include <cstdint>
#include <span>
#include <vector>

#include "backstep/core/expected.h"
#include "backstep/core/register_file.h"
#include "recorder/address_space.h"
#include "recorder/cpu_state.h"
#include "recorder/recording_sink.h"
#include "recorder/tracee.h"
#include "recorder/untraced.h"

namespace backstep::record {

// The program at its exec stop.
struct InitialState {
  user_regs_struct regs{};
  std::vector<std::uint8_t> xstate;        // XSAVE image
  std::vector<core::RegisterWrite> slots;  // every register, CpuLayout order
  std::vector<std::uint8_t> auxv;          // /proc/PID/auxv (vDSO hidden when asked)
};

// What the recorder sets up in the program: rdtsc faulting as spawned
// (`trap_rdtsc`), CPUID faulting when `cpuid_faulting` and the CPU has it
// (Traps::cpuid says whether it is on).
Traps EnableTraps(Tracee& tracee, bool trap_rdtsc, bool cpuid_faulting);

// Reads the stopped program's state into *out and its mappings into
// *space. `hide_vdso`: HideVdso() first (stack and auxv).
core::Status ReadInitialState(Tracee& tracee, const CpuLayout& layout, bool hide_vdso,
                              AddressSpace* space, InitialState* out);

// A reader of the tracee's mappings for a sink ([vvar] and [vsyscall] as
// zeros); `tracee` must outlive it.
MappingContents ImageContents(Tracee& tracee);

// Calls sink.OnStart with the image: the mappings of `space`, `auxv`,
// every register (`registers`, CpuLayout order) and the first `pc`. The
// contents reader refers to `tracee`, which must outlive the sink's use of
// it (the recording).
core::Status StartSink(RecordingSink& sink, Tracee& tracee, const AddressSpace& space,
                       std::vector<std::uint8_t> auxv,
                       std::span<const core::RegisterWrite> registers, core::Address pc);

}  // namespace backstep::record
