#include "recorder/signal_delivery.h"

#include <sys/ptrace.h>

namespace backstep::record {

std::array<std::uint8_t, 128> ReadSigInfo(const Tracee& tracee) {
  std::array<std::uint8_t, 128> siginfo{};
  ptrace(PTRACE_GETSIGINFO, tracee.thread(), nullptr, siginfo.data());
  return siginfo;
}

core::Expected<SignalDelivery> DeliverSignal(Tracee& tracee, int sig) {
  core::Expected<Stop> stop = tracee.Step(sig);
  if (!stop.ok()) return stop.status();
  SignalDelivery delivery;
  delivery.stop = *stop;
  if (stop->kind == Stop::kExited || stop->kind == Stop::kKilled) {
    delivery.outcome = SignalDelivery::Outcome::kEnded;
    return delivery;
  }
  if (stop->kind != Stop::kStepped) {
    delivery.outcome = SignalDelivery::Outcome::kOtherStop;
    return delivery;
  }
  if (core::Status s = tracee.GetRegs(&delivery.regs); !s.ok()) return s;
  if (core::Status s = ClearStepFlagsInSignalFrame(tracee, delivery.regs.rsp); !s.ok()) return s;
  return delivery;
}

}  // namespace backstep::record
