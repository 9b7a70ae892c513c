// Signal delivery both engines share: the kernel delivers a signal the
// program handles (or a fault it raised) with one step of the tracee, which
// stops at the handler's first instruction with the signal frame on the
// stack. DeliverSignal() runs that step and says how it ended; the engine
// then records the delivery (SignalRecord: the frame as a diff of writable
// memory, every register it changed, the handler's address).
//
// The frame's saved rflags carry the TF of single-stepping: DeliverSignal()
// clears it there (ClearStepFlagsInSignalFrame), so the program never sees
// it.
//
// Thread-safety: one thread at a time (the tracee's).
#pragma once

#include <sys/user.h>

#include <array>
#include <cstdint>

#include "backstep/core/expected.h"
#include "recorder/tracee.h"

namespace backstep::record {

// The kernel's siginfo_t of the signal the selected thread stopped with
// (PTRACE_GETSIGINFO; zeros when it cannot be read).
std::array<std::uint8_t, 128> ReadSigInfo(const Tracee& tracee);

struct SignalDelivery {
  enum class Outcome {
    kAtHandler,  // stopped at the handler: `regs`
    kEnded,      // the program ended (a fatal signal): `stop`
    kOtherStop,  // another signal or event came first: refused by the engines
  } outcome = Outcome::kAtHandler;
  Stop stop;
  user_regs_struct regs{};  // kAtHandler: the registers at the handler
};

// Steps the selected thread of the tracee, stopped with `sig`, delivering it.
core::Expected<SignalDelivery> DeliverSignal(Tracee& tracee, int sig);

}  // namespace backstep::record
