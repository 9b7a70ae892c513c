// The emulation engine's Unicorn callbacks (emu_session.h): writes (and
// the dirty pages to push into the tracee), cpuid, interrupts, reads of
// [vvar], unmapped memory and the stack's growth.
#include <cstring>
#include <string>

#include "backstep/core/hex.h"
#include "recorder/cpuid.h"
#include "recorder/emu/emu_session.h"

namespace backstep::record {

void EmuSession::HookCode(uc_engine*, std::uint64_t address, std::uint32_t size, void* self) {
  static_cast<EmuSession*>(self)->OnCode(address, size);
}

void EmuSession::HookWrite(uc_engine*, uc_mem_type, std::uint64_t address, int size,
                           std::int64_t value, void* self) {
  auto* s = static_cast<EmuSession*>(self);
  if (size > 8) {
    s->wide_.push_back({address, static_cast<std::uint64_t>(size)});  // contents read after it
  } else {
    std::uint8_t bytes[8];
    std::memcpy(bytes, &value, 8);
    s->writes_.Add(address, std::span<const std::uint8_t>(bytes, static_cast<std::size_t>(size)));
  }
  for (std::uint64_t page = address / kPage; page <= (address + size - 1) / kPage; ++page) {
    if (page == s->last_dirty_) continue;
    s->last_dirty_ = page;
    if (s->dirty_set_.insert(page).second) s->dirty_.push_back(page);
  }
}

void EmuSession::HookSyscall(uc_engine*, void* self) {
  static_cast<EmuSession*>(self)->OnSyscall();
}

int EmuSession::HookCpuid(uc_engine* uc, void* self) {
  std::uint64_t rax = 0, rcx = 0;
  uc_reg_read(uc, UC_X86_REG_RAX, &rax);
  uc_reg_read(uc, UC_X86_REG_RCX, &rcx);
  const auto leaf = static_cast<std::uint32_t>(rax), subleaf = static_cast<std::uint32_t>(rcx);
  // Native recordings' hook (EmuOptions::cpuid): what the recorded program saw.
  const EmuOptions& emu = static_cast<EmuSession*>(self)->emu_;
  const CpuidResult r = emu.cpuid ? emu.cpuid(leaf, subleaf) : PortableCpuid(leaf, subleaf);
  std::uint64_t out[4] = {r.eax, r.ebx, r.ecx, r.edx};
  uc_reg_write(uc, UC_X86_REG_RAX, &out[0]);
  uc_reg_write(uc, UC_X86_REG_RBX, &out[1]);
  uc_reg_write(uc, UC_X86_REG_RCX, &out[2]);
  uc_reg_write(uc, UC_X86_REG_RDX, &out[3]);
  return 1;  // skip the emulator's own cpuid
}

void EmuSession::HookInterrupt(uc_engine*, std::uint32_t number, void* self) {
  auto* s = static_cast<EmuSession*>(self);
  s->Halt(core::Status::Unsupported(
      "the program raised CPU exception/interrupt " + std::to_string(number) + " at " +
      core::HexU64(s->pending_pc_) +
      " (int3/int n, a division error, ...): signals are not supported by the emu engine"));
}

void EmuSession::HookVvarRead(uc_engine*, uc_mem_type, std::uint64_t address, int, std::int64_t,
                              void* self) {
  auto* s = static_cast<EmuSession*>(self);
  s->Halt(core::Status::Unsupported(
      "the program reads the kernel's [vvar] page at " + core::HexU64(address) + " (from " +
      core::HexU64(s->pending_pc_) +
      ": a vdso clock function): not supported by the emu engine, use --engine ptrace"));
}

bool EmuSession::HookUnmapped(uc_engine*, uc_mem_type, std::uint64_t address, int, std::int64_t,
                              void* self) {
  auto* s = static_cast<EmuSession*>(self);
  s->fault_address_ = address;
  // Below the stack, within its rlimit's reach: the kernel would grow it.
  if (s->stack_low_ && address < s->stack_low_ && address + kMaxStackGrowth >= s->stack_low_) {
    if (core::Status st = s->GrowStack(address); st.ok()) return true;  // retry the access
  }
  return false;  // a fault: uc_emu_start returns the error
}

// Grows the stack down to `address`, in the tracee (its own access faults
// the stack down, as the kernel does for the program) and in Unicorn.
core::Status EmuSession::GrowStack(core::Address address) {
  const core::Address low = address / kPage * kPage;
  user_regs_struct saved{};
  if (core::Status st = tracee_.GetRegs(&saved); !st.ok()) return st;
  std::uint8_t code[3] = {};
  if (tracee_.ReadMemory(saved.rip, code) != 3) return core::Status::IOError("stack growth");
  static const std::uint8_t kStore[3] = {0xc6, 0x00, 0x00};  // mov byte [rax], 0
  if (core::Status st = tracee_.WriteMemory(saved.rip, kStore); !st.ok()) return st;
  user_regs_struct r = saved;
  r.rax = low;
  core::Status status = tracee_.SetRegs(r);
  core::Expected<Stop> stop = status.ok() ? tracee_.Step() : core::Expected<Stop>(status);
  if (tracee_.alive()) {
    tracee_.WriteMemory(saved.rip, code);
    tracee_.SetRegs(saved);
  }
  if (!stop.ok()) return stop.status();
  if (stop->kind != Stop::kStepped) return core::Status::IOError("stack growth refused");
  if (uc_mem_map(uc_, low, stack_low_ - low, UC_PROT_READ | UC_PROT_WRITE) != UC_ERR_OK)
    return core::Status::IOError("stack growth: emulator");
  stack_low_ = low;
  return core::Status::Ok();
}

void EmuSession::Halt(core::Status why) {
  if (error_.ok() && !why.ok()) error_ = std::move(why);
  pending_ = false;  // never emit an instruction that did not complete
  done_ = true;
  uc_emu_stop(uc_);
}

}  // namespace backstep::record
