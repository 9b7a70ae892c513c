// Registers of the emulation engine (emu_session.h): Unicorn's, the
// tracee's and the trace's slots (CpuLayout order); the x87/SSE state as an
// FXSAVE image both ways.
#include <sys/ptrace.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <iterator>
#include <string>

#include "backstep/core/hex.h"
#include "recorder/emu/emu_session.h"

namespace backstep::record {

// The tracee's initial registers into Unicorn, checked by reading them back.
core::Status EmuSession::LoadRegisters() {
  // Registers: GPRs, flags, fs/gs base, then the x87/SSE state.
  WriteGprs(tracee_regs_);
  std::uint64_t rip = tracee_regs_.rip, fs = tracee_regs_.fs_base, gs = tracee_regs_.gs_base;
  uc_reg_write(uc_, UC_X86_REG_RIP, &rip);
  uc_reg_write(uc_, UC_X86_REG_FS_BASE, &fs);
  uc_reg_write(uc_, UC_X86_REG_GS_BASE, &gs);
  // The whole x87/SSE state, as after a natively run instruction: the
  // registers, TOP, tags, and the last x87 instruction's opcode and
  // pointers, which a snapshot taken mid-run holds (at exec they are the
  // architectural defaults).
  if (core::Status s = LoadFpFromTracee(); !s.ok()) return s;
  // Check that what Unicorn reports is what the tracee had.
  fp_slots_ = slots_;
  CollectFp(&fp_slots_);
  for (std::size_t i = layout_.gpr_count(); i < layout_.count(); ++i) {
    if (std::memcmp(fp_slots_[i].value, slots_[i].value, layout_.size(i)) != 0) {
      std::uint64_t want = 0, got = 0;
      std::memcpy(&want, slots_[i].value, 8);
      std::memcpy(&got, fp_slots_[i].value, 8);
      return core::Status::Unsupported(
          "emulator: the program's initial x87/SSE state cannot be loaded into the emulator (" +
          std::string(core::X86_64().info(slots_[i].reg).name) + ": " + core::HexU64(want) +
          " vs " + core::HexU64(got) + ")");
    }
  }
  return core::Status::Ok();
}

void EmuSession::HotFrom(const user_regs_struct& r, std::uint64_t* v) {
  const std::uint64_t values[kHot] = {r.rax, r.rbx, r.rcx, r.rdx, r.rsi,   r.rdi,
                                      r.rbp, r.rsp, r.r8,  r.r9,  r.r10,   r.r11,
                                      r.r12, r.r13, r.r14, r.r15, r.eflags};
  std::copy(std::begin(values), std::end(values), v);
}

void EmuSession::HotInto(const std::uint64_t* v, user_regs_struct* r) {
  r->rax = v[0], r->rbx = v[1], r->rcx = v[2], r->rdx = v[3], r->rsi = v[4], r->rdi = v[5];
  r->rbp = v[6], r->rsp = v[7], r->r8 = v[8], r->r9 = v[9], r->r10 = v[10], r->r11 = v[11];
  r->r12 = v[12], r->r13 = v[13], r->r14 = v[14], r->r15 = v[15], r->eflags = v[16];
}

void EmuSession::ReadHot(std::uint64_t* values) {
  void* ptrs[kHot];
  for (std::size_t i = 0; i < kHot; ++i) ptrs[i] = &values[i];
  uc_reg_read_batch(uc_, const_cast<int*>(kHotRegs), ptrs, static_cast<int>(kHot));
  values[16] &= ~kRf;
}

void EmuSession::WriteGprs(const user_regs_struct& r) {
  std::uint64_t v[kHot];
  HotFrom(r, v);
  void* ptrs[kHot];
  for (std::size_t i = 0; i < kHot; ++i) ptrs[i] = &v[i];
  uc_reg_write_batch(uc_, const_cast<int*>(kHotRegs), ptrs, static_cast<int>(kHot));
}

user_regs_struct EmuSession::EmulatorRegs() {
  user_regs_struct r = tracee_regs_;
  std::uint64_t v[kHot] = {};
  ReadHot(v);
  HotInto(v, &r);
  r.fs_base = gpr_[kFsBaseSlot];
  r.gs_base = gpr_[kGsBaseSlot];
  std::uint64_t rip = 0;
  uc_reg_read(uc_, UC_X86_REG_RIP, &rip);
  r.rip = rip;
  return r;
}

void EmuSession::CollectFp(std::vector<core::RegisterWrite>* slots) {
  // An FXSAVE image from Unicorn's registers, so that CpuLayout::CollectFp
  // produces exactly what it produces from the kernel's XSAVE image.
  static constexpr int kIds[] = {UC_X86_REG_FPCW,  UC_X86_REG_FPSW, UC_X86_REG_FPTAG,
                                 UC_X86_REG_MXCSR, UC_X86_REG_FOP,  UC_X86_REG_FIP,
                                 UC_X86_REG_FDP};
  std::uint64_t v[7] = {};
  void* ptrs[7];
  for (int i = 0; i < 7; ++i) ptrs[i] = &v[i];
  uc_reg_read_batch(uc_, const_cast<int*>(kIds), ptrs, 7);
  std::uint8_t* x = xstate_.data();
  const std::uint16_t fcw = static_cast<std::uint16_t>(v[0]),
                      fsw = static_cast<std::uint16_t>(v[1]);
  const std::uint16_t tag = static_cast<std::uint16_t>(v[2]);
  std::memcpy(&x[0], &fcw, 2);
  std::memcpy(&x[2], &fsw, 2);
  std::uint8_t abridged = 0;
  for (int i = 0; i < 8; ++i) {
    if (((tag >> (2 * i)) & 3) != 3) abridged |= static_cast<std::uint8_t>(1u << i);
  }
  x[4] = abridged;
  // The last x87 instruction's opcode and pointers: TCG does not keep them,
  // the CPU's from the last x87 instruction run natively do.
  std::memcpy(&x[6], &x87_fop_, 2);
  std::memcpy(&x[8], &x87_fip_, 8);
  std::memcpy(&x[16], &x87_fdp_, 8);
  const std::uint32_t mxcsr = static_cast<std::uint32_t>(v[3]);
  std::memcpy(&x[24], &mxcsr, 4);
  const unsigned top = (fsw >> 11) & 7;
  for (unsigned st = 0; st < 8; ++st) {
    std::uint8_t reg[16] = {};
    uc_reg_read(uc_, UC_X86_REG_FP0 + static_cast<int>((top + st) & 7), reg);
    std::memcpy(&x[32 + 16 * st], reg, 16);
    std::memset(&x[32 + 16 * st + 10], 0, 6);
  }
  for (int i = 0; i < 16; ++i) uc_reg_read(uc_, UC_X86_REG_XMM0 + i, &x[160 + 16 * i]);
  layout_.CollectFp(xstate_, *slots);
}

void EmuSession::DiffHot(const std::uint64_t* v) {
  for (std::size_t i = 0; i < kHot; ++i) {
    if (v[i] == gpr_[i]) continue;
    gpr_[i] = v[i];
    core::RegisterWrite& w = changes_.emplace_back();
    w.reg = slots_[i].reg;
    std::memcpy(w.value, &v[i], 8);
    std::memcpy(slots_[i].value, &v[i], 8);
  }
}

// The tracee's x87/SSE state into Unicorn (after the CPU or the kernel
// changed it: a natively run instruction, a signal's delivery, rt_sigreturn).
core::Status EmuSession::LoadFpFromTracee() {
  user_fpregs_struct fp{};
  if (ptrace(PTRACE_GETFPREGS, tracee_.pid(), nullptr, &fp) != 0)
    return core::Status::IOError("PTRACE_GETFPREGS: " + std::string(std::strerror(errno)));
  std::uint32_t mxcsr = fp.mxcsr;
  uc_reg_write(uc_, UC_X86_REG_MXCSR, &mxcsr);
  for (int i = 0; i < 16; ++i) uc_reg_write(uc_, UC_X86_REG_XMM0 + i, &fp.xmm_space[4 * i]);
  // x87: control, status (with TOP), tags, the physical registers, pointers.
  std::uint16_t fcw = static_cast<std::uint16_t>(fp.cwd), fsw = static_cast<std::uint16_t>(fp.swd);
  uc_reg_write(uc_, UC_X86_REG_FPCW, &fcw);
  uc_reg_write(uc_, UC_X86_REG_FPSW, &fsw);
  const auto* st = reinterpret_cast<const std::uint8_t*>(fp.st_space);
  std::uint16_t tag = FullTagWord(static_cast<std::uint8_t>(fp.ftw), fsw, st);
  uc_reg_write(uc_, UC_X86_REG_FPTAG, &tag);
  const unsigned top = (fsw >> 11) & 7;
  for (unsigned i = 0; i < 8; ++i) {
    std::uint8_t reg[16] = {};
    std::memcpy(reg, st + 16 * i, 10);
    uc_reg_write(uc_, UC_X86_REG_FP0 + static_cast<int>((top + i) & 7), reg);
  }
  x87_fop_ = fp.fop;
  x87_fip_ = fp.rip;
  x87_fdp_ = fp.rdp;
  return core::Status::Ok();
}

}  // namespace backstep::record
