// SyscallSource: what answers the program's system calls when the emu
// engine (emu_recorder.h) records, instead of its tracee running them. The
// native engine's materialization (recorder/native/materialize.h) answers
// from its log: the emulated program then re-executes a run that happened
// natively, and the trace is the one an emu recording of that run would be.
//
// Thread-safety: called by the recording's thread only.
#pragma once

#include <sys/user.h>

#include <cstdint>
#include <span>

#include "backstep/core/expected.h"
#include "recorder/tracee.h"

namespace backstep::record {

class SyscallSource {
 public:
  virtual ~SyscallSource() = default;
  // The emu engine's tracee is stopped at a `syscall` (rseq excepted: the
  // engine refuses it itself) with `regs` (the emulator's registers; its
  // memory holds the emulator's). Answer() leaves the tracee as the system
  // call would (registers with rip past it, the memory the kernel wrote) and
  // returns kStepped, or runs it and returns how it ended (exit). An error
  // (e.g. the registers differ from the log's) ends the recording with it.
  virtual core::Expected<Stop> Answer(Tracee& tracee, const user_regs_struct& regs) = 0;
  // True once the recording should stop after the system call just
  // answered (its instruction and effects are sent to the sink first): the
  // end of an interval of a native recording. The result's end is then
  // RecordResult::End::kInterrupted.
  virtual bool EndsHere() const { return false; }
  // A signal the recorded run got as the system call just answered
  // returned (0: none): the engine delivers it before the next instruction,
  // with this siginfo_t (128 bytes), and records the delivery.
  struct SignalAfter {
    int signal = 0;
    std::span<const std::uint8_t> siginfo;
  };
  virtual SignalAfter Signal() const { return {}; }
};

}  // namespace backstep::record
