// What one step of the ptrace engine changed (ptrace_session.h): registers,
// memory writes (insn_decoder.h's rules, else a diff), reads, a system
// call's effects, and the periodic check that nothing was missed.
#include <x86intrin.h>

#include <cstdio>
#include <cstdlib>

#include "backstep/core/hex.h"
#include "recorder/ptrace/ptrace_session.h"
#include "recorder/syscall_effects.h"

namespace backstep::record {

void PtraceSession::Capture(std::span<const Range> ranges) {
  CaptureWrites(tracee_, ranges, &space_, &writes_);
}

void PtraceSession::CollectReads(const Decoded& d, const user_regs_struct& after) {
  reads_.clear();
  if (!options_.reads) return;
  read_ranges_.clear();
  InsnDecoder::Reads(d, regs_, after, &read_ranges_);
  if (d.gather) InsnDecoder::GatherReads(*d.gather, regs_, layout_, gather_xstate_, &read_ranges_);
  // The opmask as the step left it (xstate_, fetched after it: d.fp), which
  // is its value before: a masked read does not write its mask.
  for (const Decoded::MaskedRead& m : d.masked_reads)
    InsnDecoder::MaskedReads(m, regs_, layout_.Opmask(xstate_, m.mask_register), &read_ranges_);
  std::uint64_t total = 0;
  for (const Range& r : read_ranges_) total += r.size;
  read_data_.assign(total, 0);
  std::size_t at = 0;
  for (const Range& r : read_ranges_) {
    const std::span<std::uint8_t> out = std::span(read_data_).subspan(at, r.size);
    if (options_.read_values) space_.ReadTraced(tracee_, r.start, out);
    reads_.push_back({r.start, out});
    at += r.size;
  }
}

core::Status PtraceSession::OnStepped(core::Address pc, const Decoded& d) {
  user_regs_struct after{};
  if (core::Status s = tracee_.GetRegs(&after); !s.ok()) return s;
  if (d.syscall && (after.r11 & (kTf | kRf))) {
    // Single-stepping leaks TF into the flags `syscall` saves in r11.
    after.r11 &= ~(kTf | kRf);
    if (core::Status s = tracee_.SetRegs(after); !s.ok()) return s;
  }
  if (d.pushf) {
    std::uint64_t flags = 0;
    if (tracee_.ReadMemory(after.rsp, {reinterpret_cast<std::uint8_t*>(&flags), 8}) == 8 &&
        (flags & (kTf | kRf))) {
      flags &= ~(kTf | kRf);
      if (core::Status s =
              tracee_.WriteMemory(after.rsp, {reinterpret_cast<std::uint8_t*>(&flags), 8});
          !s.ok())
        return s;
    }
  }
  next_slots_ = slots_;
  layout_.CollectGprs(after, next_slots_);
  const bool fetch_fp = d.fp || d.syscall;
  if (fetch_fp) {
    if (core::Status s = tracee_.GetXState(&xstate_); !s.ok()) return s;
    layout_.CollectFp(xstate_, next_slots_);
  }
  changes_.clear();
  DiffRegisters(layout_, slots_, next_slots_, 0, fetch_fp ? layout_.count() : layout_.gpr_count(),
                &changes_);
  writes_.Clear();
  ranges_.clear();
  SyscallRecord sys;
  MapChanges maps;
  if (d.syscall) {
    if (core::Status s = SyscallEffects(regs_, after, &sys, &maps); !s.ok()) return s;
  } else {
    // Reads first: their contents are the trace's view before this step.
    CollectReads(d, after);
    InsnDecoder::Writes(d, regs_, after, &ranges_);
    if (d.unknown_writes) {
      ++result_.full_diffs;
      space_.Diff(tracee_, &ranges_);
    }
    for (const Range& r : ranges_) {
      const Mapping* m = space_.Find(r.start);
      if (m && m->exec) decoder_.Invalidate();  // self-modifying code
    }
    Capture(ranges_);
  }
  slots_.swap(next_slots_);
  regs_ = after;
  last_pc_ = pc;
  ++result_.instructions;
  if (options_.check_interval && result_.instructions % options_.check_interval == 0) {
    if (core::Status s = Check(fetch_fp); !s.ok()) return s;
  }
  const std::span<const core::MemoryAccess> writes = writes_.Build();
  const std::uint8_t size = d.size ? d.size : static_cast<std::uint8_t>(0);
  threads_.SinkFollowCurrent(sink_);
  if (!d.syscall) {
    sink_.OnInstruction({pc, size, changes_, writes, reads_});
    return core::Status::Ok();
  }
  ++result_.syscalls;
  sink_.OnInstruction({pc, size, {}, {}, {}});
  sys.writes = writes;
  sys.registers = changes_;
  sys.unmapped = maps.unmapped;
  sys.mapped = maps.mapped;
  sys.protected_ = maps.reprotected;
  sink_.OnSyscall(sys);
  return core::Status::Ok();
}

core::Status PtraceSession::SyscallEffects(const user_regs_struct& before,
                                           const user_regs_struct& after, SyscallRecord* r,
                                           MapChanges* maps) {
  const std::uint64_t nr = before.rax;
  const std::uint64_t args[6] = {before.rdi, before.rsi, before.rdx,
                                 before.r10, before.r8,  before.r9};
  r->number = static_cast<std::uint32_t>(nr);
  r->result = after.rax;
  std::copy(std::begin(args), std::end(args), r->args);
  const bool failed = after.rax > ~std::uint64_t{4095};
  if (ChangesMappings(nr) && !failed) {
    if (core::Status s = UpdateMappings(tracee_, nr, args, after.rax, &space_, maps); !s.ok())
      return s;
    decoder_.Invalidate();
    AddNewMappingContents(tracee_, *maps, &writes_);
  }
  if (SyscallWrites(tracee_, nr, args, after.rax, &space_, &ranges_)) ++result_.full_diffs;
  Capture(ranges_);
  return core::Status::Ok();
}

core::Status PtraceSession::Check(bool fp_fetched) {
  std::vector<Range> missed;
  space_.Diff(tracee_, &missed);
  for (const Range& r : missed) {
    result_.missed_bytes += r.size;
    if (getenv("BACKSTEP_RECORD_DEBUG")) {
      std::fprintf(stderr, "record: missed write %s+%llu by instruction %llu or before (pc %s)\n",
                   core::HexU64(r.start).c_str(), static_cast<unsigned long long>(r.size),
                   static_cast<unsigned long long>(result_.instructions),
                   core::HexU64(last_pc_).c_str());
    }
  }
  Capture(missed);
  // A parked thread is running in the kernel: its FP state cannot be read.
  if (!fp_fetched && !threads_.current().parked) {
    if (core::Status s = tracee_.GetXState(&xstate_); !s.ok()) return s;
    std::vector<core::RegisterWrite> fp = slots_;
    layout_.CollectFp(xstate_, fp);
    const std::size_t before = changes_.size();
    DiffRegisters(layout_, slots_, fp, layout_.gpr_count(), layout_.count(), &changes_);
    result_.missed_registers += changes_.size() - before;
    slots_ = fp;
  }
  return core::Status::Ok();
}

core::Status PtraceSession::EmulateRdtsc(core::Address pc, const Decoded& d) {
  user_regs_struct after = regs_;
  unsigned aux = 0;
  const std::uint64_t tsc = d.rdtscp ? __rdtscp(&aux) : __rdtsc();
  after.rax = tsc & 0xffffffff;
  after.rdx = tsc >> 32;
  if (d.rdtscp) after.rcx = aux;
  after.rip = pc + d.size;
  if (core::Status s = tracee_.SetRegs(after); !s.ok()) return s;
  Decoded plain = d;
  plain.rdtsc = plain.rdtscp = false;
  return OnStepped(pc, plain);
}

core::Status PtraceSession::EmulateSyscallFailure(core::Address pc, const Decoded& d,
                                                  std::int64_t error) {
  // What `syscall` would leave: rax = -errno, rcx = next rip, r11 = rflags.
  user_regs_struct after = regs_;
  after.rax = static_cast<std::uint64_t>(error);
  after.rcx = pc + d.size;
  after.r11 = regs_.eflags & ~(kTf | kRf);
  after.rip = pc + d.size;
  if (core::Status s = tracee_.SetRegs(after); !s.ok()) return s;
  return OnStepped(pc, d);
}

}  // namespace backstep::record
