// The signals another recording got without effect (EmuOptions::
// quiet_signals: SIGCHLD of an untraced child, which the ptrace engine
// records wherever it arrived), given to this one at the same positions so
// that the engine cross-check (emu_crosscheck_test.cc) can compare the two
// engines' traces position by position. The system calls' answers are
// given by GivenAnswers (recorder/given_answers.h).
#include "recorder/emu/emu_session.h"

namespace backstep::record {

void EmuSession::GiveQuietSignals(core::Address pc) {
  while (next_quiet_signal_ < emu_.quiet_signals.size() &&
         emu_.quiet_signals[next_quiet_signal_].after == result_.instructions) {
    // As the ptrace engine records a signal without effect: no registers,
    // no writes, the program goes on at `pc`.
    const EmuOptions::QuietSignal& given = emu_.quiet_signals[next_quiet_signal_++];
    ++result_.signals;
    sink_.OnSignal({given.signal, pc, given.siginfo, {}, {}});
  }
}

}  // namespace backstep::record
