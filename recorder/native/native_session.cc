#include "recorder/native/native_session.h"

#include <elf.h>
#include <sched.h>
#include <sys/ptrace.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>
#include <x86intrin.h>

#include <cerrno>
#include <cstring>
#include <system_error>
#include <thread>

#include "backstep/core/hex.h"
#include "recorder/cpuid.h"
#include "recorder/native/seccomp_trap.h"
#include "recorder/native/unrecorded_child.h"
#include "recorder/one_cpu.h"
#include "recorder/signal_disposition.h"
#include "recorder/vdso.h"

namespace backstep::record {
namespace {

// A signal the kernel raised for the instruction that faulted: delivered at
// once (the emulator raises it again at the same instruction).
bool Synchronous(int sig, int code) {
  const bool fault_signal = sig == SIGSEGV || sig == SIGBUS || sig == SIGILL || sig == SIGFPE ||
                            sig == SIGTRAP || sig == SIGSYS;
  return fault_signal && code > 0;
}

std::string Errno() { return std::strerror(errno); }

}  // namespace

core::Status NativeSession::Start() {
  user_regs_struct regs{};
  if (core::Status s = tracee_.GetRegs(&regs); !s.ok()) return s;
  // One CPU for the program (and the recorder: RecordNative). Without CPUID
  // faulting the APIC ids in CPUID differ between CPUs: that CPU is logged.
  // With it, a program on another CPU than the recorder would make the CPU
  // switch to and from the idle thread, which has no CPUID faulting, at each
  // stop (CpuidFaultingForThisThread: up to 9x the cost per system call).
  if (clock_getcpuclockid(pid_, &program_clock_) != 0)
    return core::Status::IOError("clock_getcpuclockid of the program: " + Errno());
  last_snapshot_ns_ = ProgramCpuNs();
  cpu_ = FirstAllowedCpu();
  if (core::Status s = PinToCpu(pid_, cpu_); !s.ok()) return s;
  if (log_.cpuid == NativeLog::Cpuid::kPortable) {
    if (core::Status s = EnableCpuidFaulting(tracee_); !s.ok()) return s;
  } else {
    log_.cpuid = NativeLog::Cpuid::kHost;
    log_.cpu = cpu_;
    log_.cpu_signature = CpuSignature();
    // The ids the program's cpuid will show, for this process's
    // materialization to answer with (cpuid.h, WithFirstCpuIds).
    PrimeHostCpuIds();
  }
  result_.cpuid = log_.cpuid;
  core::Expected<std::vector<std::uint8_t>> auxv = tracee_.ReadAuxv();
  if (!auxv.ok()) return auxv.status();
  if (core::Status s = HideVdso(tracee_, regs.rsp, &*auxv); !s.ok()) return s;
  for (std::size_t i = 0; i + 16 <= auxv->size(); i += 16) {
    std::uint64_t type = 0, value = 0;
    std::memcpy(&type, &(*auxv)[i], 8);
    std::memcpy(&value, &(*auxv)[i + 8], 8);
    if (type != AT_RANDOM) continue;
    if (options_.at_random.size() == log_.at_random.size()) {
      std::copy(options_.at_random.begin(), options_.at_random.end(), log_.at_random.begin());
      if (core::Status s = tracee_.WriteMemory(value, log_.at_random); !s.ok()) return s;
    }
    if (tracee_.ReadMemory(value, log_.at_random) != 16)
      return core::Status::IOError("cannot read AT_RANDOM's bytes at " + core::HexU64(value));
  }
  core::Expected<std::vector<Mapping>> maps = tracee_.ReadMaps();
  if (!maps.ok()) return maps.status();
  std::set<std::string> seen;
  for (const Mapping& m : *maps) {
    if (m.name.empty() || m.name[0] != '/' || !seen.insert(m.name).second) continue;
    struct stat st {};
    if (stat(m.name.c_str(), &st) != 0) continue;
    log_.files.push_back({m.name, static_cast<std::uint64_t>(st.st_dev),
                          static_cast<std::uint64_t>(st.st_ino),
                          static_cast<std::uint64_t>(st.st_size),
                          static_cast<std::uint64_t>(st.st_mtim.tv_sec) * 1000000000u +
                              static_cast<std::uint64_t>(st.st_mtim.tv_nsec)});
  }
  log_.argv = options_.spawn.argv;
  char cwd[4096] = {};
  if (getcwd(cwd, sizeof cwd)) log_.cwd = cwd;
  log_.environment = CurrentEnvironment();
  std::optional<std::uint64_t> allowed;
  if (options_.syscall_buffer) {
    // Clock reads stay traced when their answers are given.
    core::Expected<std::optional<SyscallBuffer>> buffer =
        SyscallBuffer::Install(tracee_, options_.kernel_answers.empty());
    if (!buffer.ok()) return buffer.status();
    buffer_ = std::move(*buffer);
    if (buffer_) {
      allowed = buffer_->allowed_ip();
      // Not the program's memory: a full diff (a vfork child's calls pass
      // through the handler's data) neither copies nor reports it.
      for (const auto& [start, size] : buffer_->regions()) entry_memory_.Skip(start, size);
    }
  }
  like_ = regs;
  return InstallSyscallTrap(tracee_, allowed);
}

core::Expected<int> NativeSession::Wait() {
  while (true) {
    int status = 0;
    const pid_t got = waitpid(-1, &status, __WALL);
    if (got < 0) {
      if (errno == EINTR) continue;
      return core::Status::IOError("waitpid: " + Errno());
    }
    if (got == pid_) return status;
    OnChild(got, status);
  }
}

void NativeSession::OnChild(pid_t child, int status) {
  if (WIFEXITED(status) || WIFSIGNALED(status)) {
    children_.erase(child);
    return;
  }
  children_.insert(child);
  if (const pid_t born = ServeUnrecordedChild(child, status); born > 0) children_.insert(born);
}

void NativeSession::Finish(int status) {
  ended_ = true;
  if (WIFEXITED(status)) {
    log_.end = NativeLog::End::kExited;
    log_.status = WEXITSTATUS(status);
  } else {
    log_.end = NativeLog::End::kKilled;
    log_.status = WTERMSIG(status);
  }
  result_.end = log_.end;
  result_.status = log_.status;
}

core::Status NativeSession::EmulateRdtsc(const user_regs_struct& regs, bool* done) {
  std::uint8_t code[3] = {};
  const std::size_t n = tracee_.ReadMemory(regs.rip, code);
  const bool rdtsc = n >= 2 && code[0] == 0x0f && code[1] == 0x31;
  const bool rdtscp = n == 3 && code[0] == 0x0f && code[1] == 0x01 && code[2] == 0xf9;
  *done = rdtsc || rdtscp;
  if (!*done) return core::Status::Ok();
  const std::uint64_t tsc =
      log_.rdtsc.size() < options_.rdtsc.size() ? options_.rdtsc[log_.rdtsc.size()] : __rdtsc();
  user_regs_struct after = regs;
  after.rax = tsc & 0xffffffff;
  after.rdx = tsc >> 32;
  if (rdtscp) after.rcx = 0;  // TSC_AUX, as the emu engine answers
  after.rip += rdtsc ? 2 : 3;
  log_.rdtsc.push_back(tsc);
  ++result_.rdtsc;
  return tracee_.SetRegs(after);
}

void NativeSession::ReadSignalSetup(const user_regs_struct& e) {
  new_action_.reset();
  new_altstack_.clear();
  if (e.orig_rax == SYS_rt_sigaction && e.rsi != 0) {
    KernelSigaction action{};
    if (tracee_.ReadMemory(e.rsi, action) == action.size())
      new_action_.emplace(static_cast<int>(e.rdi), action);
  } else if (e.orig_rax == SYS_sigaltstack && e.rdi != 0) {
    new_altstack_.resize(24);
    if (tracee_.ReadMemory(e.rdi, new_altstack_) != 24) new_altstack_.clear();
  }
}

std::uint64_t NativeSession::ProgramCpuNs() const {
  timespec t{};
  if (clock_gettime(program_clock_, &t) != 0) return 0;
  return static_cast<std::uint64_t>(t.tv_sec) * 1000000000u + static_cast<std::uint64_t>(t.tv_nsec);
}

bool NativeSession::SnapshotDue() const {
  const std::uint64_t count = log_.syscalls.size();
  const bool by_count =
      options_.snapshot_syscalls && count - last_snapshot_syscall_ >= options_.snapshot_syscalls;
  return by_count || (options_.snapshot_ms &&
                      ProgramCpuNs() - last_snapshot_ns_ >= options_.snapshot_ms * 1000000);
}

core::Status NativeSession::MaybeSnapshot() {
  snapshot_wanted_ = false;
  if (!SnapshotDue()) return core::Status::Ok();
  const std::uint64_t count = log_.syscalls.size();
  core::Expected<Snapshot> snapshot = TakeSnapshot(tracee_, signals_);
  if (!snapshot.ok()) return snapshot.status();
  if (buffer_) buffer_->Hide(&*snapshot);
  snapshot->syscall = count;
  snapshot->rdtsc = log_.rdtsc.size();
  const std::string path = log_path_ + ".snap" + std::to_string(log_.snapshots.size());
  if (core::Status s = WriteSnapshot(*snapshot, path); !s.ok()) return s;
  log_.snapshots.push_back({count, path.substr(path.rfind('/') + 1)});
  ++result_.snapshots;
  for (const LoggedWrite& run : snapshot->memory) result_.snapshot_bytes += run.bytes.size();
  last_snapshot_ns_ = ProgramCpuNs();
  last_snapshot_syscall_ = count;
  return core::Status::Ok();
}

bool NativeSession::SignalPending() const {
  siginfo_t info;
  for (const std::uint32_t flags : {0u, std::uint32_t{PTRACE_PEEKSIGINFO_SHARED}}) {
    __ptrace_peeksiginfo_args args{0, flags, 1};
    if (ptrace(PTRACE_PEEKSIGINFO, pid_, &args, &info) > 0) return true;
  }
  return false;
}

bool NativeSession::DeliverAtSyscallReturn(int sig, const user_regs_struct& regs, int* deliver) {
  const bool now = pending_at_exit_ && regs.rip == exit_rip_ && !log_.syscalls.empty() &&
                   log_.syscalls.back().exit.rip == exit_rip_;
  pending_at_exit_ = false;
  if (!now) return false;
  if (requeued_ && requeued_->si_signo == sig) {
    // The original siginfo (sender, code), not the recorder's tgkill's.
    ptrace(PTRACE_SETSIGINFO, pid_, nullptr, &*requeued_);
    requeued_.reset();
  }
  if (DiscardsSignal(pid_, sig)) {
    // Ignored (SIGCHLD...): it never reaches the program, so the log does
    // not hold it. A call it interrupted is restarted by the kernel: the
    // next stop is that call again (or restart_syscall), logged then.
    *deliver = 0;
    if (RestartsSyscall(log_.syscalls.back().exit.rax)) {
      interrupted_ = std::move(log_.syscalls.back());
      log_.syscalls.pop_back();
      --result_.syscalls;
    }
    return true;
  }
  log_.syscalls.back().signal_after = sig;
  // What the handler gets (materialization delivers the same).
  std::vector<std::uint8_t>& logged = log_.syscalls.back().siginfo;
  logged.assign(128, 0);
  if (ptrace(PTRACE_GETSIGINFO, pid_, nullptr, logged.data()) != 0) logged.clear();
  *deliver = sig;
  return true;
}

core::Status NativeSession::Run() {
  std::jthread clock;
  if (buffer_ && options_.snapshot_ms) {
    try {
      clock = std::jthread([this](std::stop_token stop) { SnapshotClock(stop); });
    } catch (const std::system_error&) {
      // No thread (a process that entered a new PID namespace cannot make
      // one): snapshots come at the program's stops only.
    }
  }
  int deliver = 0;
  while (!ended_) {
    if (ptrace(PTRACE_CONT, pid_, nullptr, deliver) != 0)
      return core::Status::IOError("PTRACE_CONT: " + Errno());
    deliver = 0;
    core::Expected<int> status = Wait();
    if (!status.ok()) return status.status();
    if (WIFEXITED(*status) || WIFSIGNALED(*status)) {
      Finish(*status);
      break;
    }
    const int sig = WSTOPSIG(*status);
    const int event = *status >> 16;
    if (sig == SIGTRAP && event == PTRACE_EVENT_SECCOMP) {
      if (core::Status s = OnSyscall(); !s.ok()) return s;
      continue;
    }
    if (event != 0 || sig == (SIGTRAP | 0x80)) {  // refused earlier; a stray stop
      pending_at_exit_ = false;
      continue;
    }
    siginfo_t info{};
    ptrace(PTRACE_GETSIGINFO, pid_, nullptr, &info);
    user_regs_struct regs{};
    if (core::Status s = tracee_.GetRegs(&regs); !s.ok()) return s;
    if (DeliverAtSyscallReturn(sig, regs, &deliver)) continue;
    if (sig == SIGSEGV && info.si_code == SI_KERNEL) {
      bool done = false;
      if (core::Status s = EmulateRdtsc(regs, &done); !s.ok()) return s;
      if (done) continue;
      if (log_.cpuid == NativeLog::Cpuid::kPortable && IsCpuidAt(tracee_, regs.rip)) {
        AnswerCpuid(&regs);
        if (core::Status s = tracee_.SetRegs(regs); !s.ok()) return s;
        continue;
      }
    }
    if (Synchronous(sig, info.si_code)) {
      // It may end the program: the buffer's calls are logged first.
      if (core::Status s = DrainBuffer(); !s.ok()) return s;
      deliver = sig;
      continue;
    }
    held_.push_back(info);
    ++result_.held_signals;
    if (core::Status s = UpdateTraceNext(); !s.ok()) return s;
  }
  // Children that outlive the program run to their end (without a tracer
  // the seccomp filter they inherited would fail their system calls).
  while (!children_.empty()) {
    int status = 0;
    const pid_t child = waitpid(-1, &status, __WALL);
    if (child < 0 && errno == EINTR) continue;
    if (child <= 0) break;
    OnChild(child, status);
  }
  return core::Status::Ok();
}

}  // namespace backstep::record
