// The emulation engine's start (emu_session.h): the shared start-up
// (session_start.h), then the program's image and registers into Unicorn
// and the hooks.
#include <cstring>
#include <string>

#include "backstep/core/hex.h"
#include "recorder/emu/emu_session.h"
#include "recorder/session_start.h"

namespace backstep::record {

core::Status EmuSession::MapInto(const Mapping& m, bool with_contents) {
  if (m.name == "[vsyscall]") return core::Status::Ok();  // fixed kernel page: never used
  if (uc_err e = uc_mem_map(uc_, m.start, m.size, UcProt(m)); e != UC_ERR_OK) {
    return core::Status::IOError("emulator: cannot map " + core::HexU64(m.start) + "+" +
                                 core::HexU64(m.size) + " (" + uc_strerror(e) + ")");
  }
  if (Unreadable(m)) {
    uc_hook h;
    uc_hook_add(uc_, &h, UC_HOOK_MEM_READ, reinterpret_cast<void*>(&HookVvarRead), this, m.start,
                m.end() - 1);
    return core::Status::Ok();
  }
  if (!with_contents || !m.read) return core::Status::Ok();
  std::vector<std::uint8_t> bytes(m.size);
  tracee_.ReadMemoryZeroFill(m.start, bytes);
  uc_mem_write(uc_, m.start, bytes.data(), bytes.size());
  return core::Status::Ok();
}

core::Status EmuSession::Start() {
  // CPUID faulting is not needed by the emulator itself (it answers cpuid),
  // only by the proxy tracee, which never runs user code: a machine without
  // it is fine.
  traps_ = EnableTraps(tracee_, options_.spawn.trap_rdtsc, /*cpuid_faulting=*/true);
  // Without the vDSO, libc's clock functions are system calls, which the
  // tracee runs (the vDSO's would read the kernel's [vvar] page).
  if (emu_.restore) {
    if (core::Status s = emu_.restore(tracee_); !s.ok()) return s;
  }
  if (emu_.name_mappings) space_.SetRename(emu_.name_mappings);
  InitialState initial;
  if (core::Status s =
          ReadInitialState(tracee_, layout_, /*hide_vdso=*/!emu_.restore, &space_, &initial);
      !s.ok())
    return s;
  tracee_regs_ = initial.regs;
  xstate_ = std::move(initial.xstate);
  slots_ = std::move(initial.slots);
  for (std::size_t i = 0; i < kGprs; ++i) std::memcpy(&gpr_[i], slots_[i].value, 8);
  if (core::Status s = PlaceAtRandom(initial.auxv); !s.ok()) return s;
  if (core::Status s = OpenEmulator(); !s.ok()) return s;
  for (const Mapping& m : space_.mappings()) {
    if (core::Status s = MapInto(m, true); !s.ok()) return s;
    if (m.name == "[stack]") stack_low_ = m.start;
  }
  if (core::Status s = LoadRegisters(); !s.ok()) return s;
  AddHooks();
  return StartSink(sink_, tracee_, space_, std::move(initial.auxv), slots_, tracee_regs_.rip);
}

core::Status EmuSession::PlaceAtRandom(std::span<const std::uint8_t> auxv) {
  if (emu_.at_random.size() != 16 || emu_.restore) return core::Status::Ok();
  for (std::size_t i = 0; i + 16 <= auxv.size(); i += 16) {
    std::uint64_t type = 0, value = 0;
    std::memcpy(&type, &auxv[i], 8);
    std::memcpy(&value, &auxv[i + 8], 8);
    if (type != 25) continue;  // AT_RANDOM
    if (core::Status s = tracee_.WriteMemory(value, emu_.at_random); !s.ok()) return s;
    space_.Note(value, emu_.at_random);
  }
  return core::Status::Ok();
}

core::Status EmuSession::OpenEmulator() {
  if (cs_open(CS_ARCH_X86, CS_MODE_64, &capstone_) != CS_ERR_OK) {
    capstone_ = 0;
    return core::Status::IOError("emulator: capstone cannot decode x86-64");
  }
  cs_option(capstone_, CS_OPT_DETAIL, CS_OPT_ON);
  if (uc_err e = uc_open(UC_ARCH_X86, UC_MODE_64, &uc_); e != UC_ERR_OK) {
    uc_ = nullptr;
    return core::Status::IOError(std::string("emulator: uc_open: ") + uc_strerror(e));
  }
  // A model whose TCG decodes tzcnt/lzcnt as the host does (BMI1, ABM);
  // what the program is told is PortableCpuid().
  uc_ctl_set_cpu_model(uc_, UC_CPU_X86_HASWELL);
  return core::Status::Ok();
}

void EmuSession::AddHooks() {
  uc_hook h;
  uc_hook_add(uc_, &h, UC_HOOK_CODE, reinterpret_cast<void*>(&HookCode), this, 1, 0);
  uc_hook_add(uc_, &h, UC_HOOK_MEM_WRITE, reinterpret_cast<void*>(&HookWrite), this, 1, 0);
  uc_hook_add(uc_, &h, UC_HOOK_INSN, reinterpret_cast<void*>(&HookSyscall), this, 1, 0,
              UC_X86_INS_SYSCALL);
  uc_hook_add(uc_, &h, UC_HOOK_INSN, reinterpret_cast<void*>(&HookCpuid), this, 1, 0,
              UC_X86_INS_CPUID);
  uc_hook_add(uc_, &h, UC_HOOK_INTR, reinterpret_cast<void*>(&HookInterrupt), this, 1, 0);
  uc_hook_add(uc_, &h, UC_HOOK_MEM_UNMAPPED, reinterpret_cast<void*>(&HookUnmapped), this, 1, 0);
}

}  // namespace backstep::record
