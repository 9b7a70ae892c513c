#include "recorder/signal_disposition.h"

#include <signal.h>
#include <string.h>

#include <fstream>
#include <optional>
#include <string_view>

namespace backstep::record {
namespace {

// The signal mask `field` ("SigCgt:", "SigIgn:") of /proc/PID/status;
// nullopt when it cannot be read.
std::optional<std::uint64_t> SignalMask(pid_t pid, std::string_view field) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(field, 0) == 0) return std::stoull(line.substr(field.size()), nullptr, 16);
  }
  return std::nullopt;
}

bool HasBit(std::uint64_t mask, int sig) { return (mask >> (sig - 1)) & 1; }

}  // namespace

std::string SignalName(int sig) {
  const char* abbrev = sigabbrev_np(sig);
  return abbrev ? std::string("SIG") + abbrev : "signal " + std::to_string(sig);
}

bool HandlesSignal(pid_t pid, int sig) {
  const std::optional<std::uint64_t> caught = SignalMask(pid, "SigCgt:");
  return caught ? HasBit(*caught, sig) : true;
}

bool IgnoresSignal(pid_t pid, int sig) {
  const std::optional<std::uint64_t> ignored = SignalMask(pid, "SigIgn:");
  return ignored ? HasBit(*ignored, sig) : false;
}

bool DiscardsSignal(pid_t pid, int sig) {
  if (IgnoresSignal(pid, sig)) return true;
  return !HandlesSignal(pid, sig) && (sig == SIGCHLD || sig == SIGURG || sig == SIGWINCH);
}

bool StopsByDefault(int sig) {
  return sig == SIGSTOP || sig == SIGTSTP || sig == SIGTTIN || sig == SIGTTOU;
}

bool RestartsSyscall(std::uint64_t rax) {
  const std::int64_t r = static_cast<std::int64_t>(rax);
  return r == -512 || r == -513 || r == -514 || r == -516;
}

}  // namespace backstep::record
