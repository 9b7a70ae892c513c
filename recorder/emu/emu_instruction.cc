// The emulation engine per instruction (emu_session.h): the code hook
// retires the previous instruction (its registers and writes to the sink)
// and decides who runs the next one: Unicorn, NativeInsn in the recorder,
// or the CPU in the tracee (emu_classify.h).
#include <algorithm>
#include <cstring>

#include "recorder/emu/emu_session.h"

namespace backstep::record {

void EmuSession::Retire() {
  if (!pending_) return;
  pending_ = false;
  std::uint64_t v[kHot];
  ReadHot(v);
  changes_.clear();
  DiffHot(v);
  if (pending_fp_) {
    fp_slots_ = slots_;
    CollectFp(&fp_slots_);
    DiffRegisters(layout_, slots_, fp_slots_, layout_.gpr_count(), layout_.count(), &changes_);
    slots_.swap(fp_slots_);
  }
  for (const Range& r : wide_) {
    std::uint8_t bytes[64];
    const std::size_t n = std::min<std::size_t>(r.size, sizeof bytes);
    if (uc_mem_read(uc_, r.start, bytes, n) == UC_ERR_OK)
      writes_.Add(r.start, std::span<const std::uint8_t>(bytes, n));
  }
  wide_.clear();
  const std::span<const core::MemoryAccess> writes = writes_.Build();
  sink_.OnInstruction({pending_pc_, pending_size_, changes_, writes, {}});
  ++result_.instructions;
  writes_.Clear();
}

void EmuSession::OnCode(core::Address pc, std::uint32_t size) {
  if (pending_ && pending_rep_ && pc == pending_pc_) {
    return;  // the next iteration of a rep string instruction (not run natively)
  }
  Retire();
  if (done_) {
    uc_emu_stop(uc_);
    return;
  }
  if (options_.max_instructions && result_.instructions >= *options_.max_instructions) {
    result_.end = RecordResult::End::kMaxInstructions;
    Halt(core::Status::Ok());
    return;
  }
  if (options_.progress && result_.instructions % 4096 == 0 &&
      !options_.progress(result_.instructions)) {
    result_.end = RecordResult::End::kInterrupted;
    Halt(core::Status::Ok());
    return;
  }
  if (next_quiet_signal_ < emu_.quiet_signals.size()) GiveQuietSignals(pc);
  auto it = info_.find(pc);
  if (it != info_.end() && it->second.in_process && it->second.writable) {
    // Self-modifying code: the stub must run the bytes memory holds now.
    std::uint8_t now[16] = {};
    const std::size_t n = it->second.bytes.size();
    if (uc_mem_read(uc_, pc, now, n) != UC_ERR_OK ||
        std::memcmp(now, it->second.bytes.data(), n) != 0) {
      info_.erase(it);
      native_.Forget(pc);
      decoder_.Invalidate();
      it = info_.end();
    }
  }
  if (it == info_.end()) {
    std::uint8_t bytes[16] = {};
    const std::size_t n = std::min<std::size_t>(size, 15);
    uc_mem_read(uc_, pc, bytes, n);
    const Decoded& d = decoder_.Decode(pc, std::span<const std::uint8_t>(bytes, n));
    PcInfo info = ClassifyInsn(capstone_, pc, std::span<const std::uint8_t>(bytes, n), d, space_);
    it = info_.emplace(pc, info).first;
  }
  const PcInfo* d = &it->second;
  pending_ = true;
  pending_pc_ = pc;
  pending_size_ = static_cast<std::uint8_t>(size);
  pending_fp_ = d->fp;
  pending_rep_ = d->rep;
  if (d->in_process) {
    pending_ = false;
    std::uint64_t v[kHot];
    std::memcpy(v, gpr_, sizeof v);
    if (native_.Run(pc, d->bytes, v)) {
      ++in_process_steps_;
      changes_.clear();
      FinishNative(pc, static_cast<std::uint8_t>(size), v, pc + size);
      return;
    }
  }
  if (d->native) {
    // Executed by the CPU rather than the emulator (see NativeStep()).
    pending_ = false;
    ++native_steps_;
    if (core::Status s = NativeStep(pc, static_cast<std::uint8_t>(size), d->simd_flags, d->memory);
        !s.ok())
      Halt(std::move(s));
    return;
  }
  if (d->rdtsc || d->rdtscp) {
    // Deterministic: a counter, not the host's TSC.
    const std::uint64_t tsc =
        next_tsc_ < emu_.rdtsc.size() ? emu_.rdtsc[next_tsc_++] : (result_.instructions + 1) * 16;
    std::uint64_t lo = tsc & 0xffffffff, hi = tsc >> 32, aux = 0, next = pc + size;
    uc_reg_write(uc_, UC_X86_REG_RAX, &lo);
    uc_reg_write(uc_, UC_X86_REG_RDX, &hi);
    if (d->rdtscp) uc_reg_write(uc_, UC_X86_REG_RCX, &aux);
    uc_reg_write(uc_, UC_X86_REG_RIP, &next);  // skips the instruction
  }
}

// Runs the instruction at pc on the real CPU, in the tracee, instead of in
// the emulator, and takes its results: for instructions that leave flags
// "undefined" (QEMU and the CPU set them differently) and rep string
// instructions (the CPU single-steps them in chunks of iterations, QEMU one
// iteration at a time), so that the trace matches the ptrace engine's.

}  // namespace backstep::record
