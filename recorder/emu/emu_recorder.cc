// The emulation engine's run loop and entry point (emu_recorder.h,
// emu_session.h).
#include "recorder/emu/emu_recorder.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "backstep/core/hex.h"
#include "recorder/emu/emu_session.h"
#include "recorder/run_session.h"

namespace backstep::record {

core::Status EmuSession::Run() {
  while (!done_) {
    std::uint64_t rip = 0;
    uc_reg_read(uc_, UC_X86_REG_RIP, &rip);
    const uc_err e = uc_emu_start(uc_, rip, 0, 0, 0);
    if (done_) break;
    if (resume_at_) {
      // After rt_sigreturn: where the signal interrupted the program.
      std::uint64_t at = *resume_at_;
      resume_at_.reset();
      uc_reg_write(uc_, UC_X86_REG_RIP, &at);
      continue;
    }
    const bool fault = e == UC_ERR_READ_UNMAPPED || e == UC_ERR_WRITE_UNMAPPED ||
                       e == UC_ERR_FETCH_UNMAPPED || e == UC_ERR_READ_PROT ||
                       e == UC_ERR_WRITE_PROT || e == UC_ERR_FETCH_PROT;
    const bool grows_stack =
        stack_low_ && fault_address_ < stack_low_ && fault_address_ + kMaxStackGrowth >= stack_low_;
    if (pending_ && ((fault && !grows_stack) || e == UC_ERR_INSN_INVALID)) {
      // A fault, or an instruction TCG lacks: the CPU runs it in the tracee
      // with the emulator's state; a fault there is delivered as a signal.
      pending_ = false;
      ++native_steps_;
      // The hook's size is TCG's, short for an instruction it cannot decode.
      std::uint8_t bytes[15] = {};
      std::size_t n = sizeof bytes;
      while (n > 0 && uc_mem_read(uc_, pending_pc_, bytes, n) != UC_ERR_OK) --n;
      const Decoded& d = decoder_.Decode(pending_pc_, std::span<const std::uint8_t>(bytes, n));
      const std::uint8_t size = d.size ? d.size : pending_size_;
      if (core::Status s = NativeStep(pending_pc_, size, true, true); !s.ok()) {
        error_ = std::move(s);
        break;
      }
      continue;
    }
    if (e != UC_ERR_OK) {
      std::uint8_t bytes[15] = {};
      std::size_t n = 15;
      while (n > 0 && uc_mem_read(uc_, pending_pc_, bytes, n) != UC_ERR_OK) --n;
      const std::string hex = core::HexBytes(
          std::span<const std::uint8_t>(bytes, std::min<std::size_t>(n, pending_size_)), ' ');
      pending_ = false;
      if (grows_stack) {
        error_ = core::Status::Unsupported("the program's stack could not grow to " +
                                           core::HexU64(fault_address_) + " (at " +
                                           core::HexU64(pending_pc_) + ")");
        break;
      }
      error_ = core::Status::Unsupported(
          std::string(fault ? "the program faulted"
                            : "the emulator cannot execute the instruction") +
          " at " + core::HexU64(pending_pc_) + " (" + hex + "): " + uc_strerror(e) +
          (fault ? " (a signal: not supported by the emu engine)" : ""));
      break;
    }
    // uc_emu_start returned without a reason (stopped at address 0?).
    if (!done_) {
      error_ = core::Status::Unsupported("the program jumped to address 0");
      break;
    }
  }
  if (tracee_.alive()) tracee_.Kill();
  if (getenv("BACKSTEP_RECORD_DEBUG")) {
    std::fprintf(stderr, "record(emu): %llu instructions run in the tracee, %llu in-process\n",
                 static_cast<unsigned long long>(native_steps_),
                 static_cast<unsigned long long>(in_process_steps_));
  }
  return error_;
}

bool EmulatorAvailable() { return true; }

core::Expected<RecordResult> RecordEmulated(const RecordOptions& options, RecordingSink& sink,
                                            const EmuOptions& emu) {
  core::Expected<Tracee> tracee = Tracee::Spawn(options.spawn);
  if (!tracee.ok()) return tracee.status();
  EmuSession session(options, emu, sink, std::move(*tracee));
  return RunSession(session, sink);
}

}  // namespace backstep::record
