#include "recorder/signal_disposition.h"

#include <signal.h>
#include <string.h>
#include <sys/syscall.h>

#include <algorithm>
#include <fstream>
#include <iterator>
#include <optional>
#include <string_view>

namespace backstep::record {
namespace {

bool IgnoredByDefault(int sig) { return sig == SIGCHLD || sig == SIGURG || sig == SIGWINCH; }

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
  return !HandlesSignal(pid, sig) && IgnoredByDefault(sig);
}

bool StopsByDefault(int sig) {
  return sig == SIGSTOP || sig == SIGTSTP || sig == SIGTTIN || sig == SIGTTOU;
}

bool KillsByDefault(int sig) {
  return !IgnoredByDefault(sig) && !StopsByDefault(sig) && sig != SIGCONT;
}

bool RestartsSyscall(std::uint64_t rax) {
  const std::int64_t r = static_cast<std::int64_t>(rax);
  return r == -512 || r == -513 || r == -514 || r == -516;
}

bool CannotRaiseSignal(std::uint64_t nr) {
  static constexpr std::uint64_t kCalls[] = {
      SYS_read,          SYS_write,        SYS_open,
      SYS_close,         SYS_stat,         SYS_fstat,
      SYS_lstat,         SYS_poll,         SYS_lseek,
      SYS_mmap,          SYS_mprotect,     SYS_munmap,
      SYS_brk,           SYS_pread64,      SYS_pwrite64,
      SYS_readv,         SYS_writev,       SYS_access,
      SYS_pipe,          SYS_select,       SYS_sched_yield,
      SYS_mremap,        SYS_dup,          SYS_dup2,
      SYS_nanosleep,     SYS_getpid,       SYS_sendto,
      SYS_recvfrom,      SYS_sendmsg,      SYS_recvmsg,
      SYS_uname,         SYS_fcntl,        SYS_getcwd,
      SYS_readlink,      SYS_gettimeofday, SYS_getrlimit,
      SYS_sysinfo,       SYS_getuid,       SYS_getgid,
      SYS_geteuid,       SYS_getegid,      SYS_getppid,
      SYS_getpgrp,       SYS_arch_prctl,   SYS_time,
      SYS_futex,         SYS_getdents64,   SYS_set_tid_address,
      SYS_clock_gettime, SYS_clock_getres, SYS_clock_nanosleep,
      SYS_epoll_wait,    SYS_openat,       SYS_newfstatat,
      SYS_readlinkat,    SYS_faccessat,    SYS_set_robust_list,
      SYS_dup3,          SYS_pipe2,        SYS_getrandom,
      SYS_statx,         SYS_faccessat2,   SYS_gettid};
  return std::find(std::begin(kCalls), std::end(kCalls), nr) != std::end(kCalls);
}

}  // namespace backstep::record
