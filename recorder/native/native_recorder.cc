#include "recorder/native/native_recorder.h"

#include <asm/prctl.h>
#include <elf.h>
#include <sched.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/ptrace.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>
#include <x86intrin.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <optional>
#include <set>

#include "backstep/core/hex.h"
#include "recorder/address_space.h"
#include "recorder/cpuid.h"
#include "recorder/native/one_cpu.h"
#include "recorder/native/seccomp_trap.h"
#include "recorder/native/snapshot.h"
#include "recorder/native/unrecorded_child.h"
#include "recorder/signal_disposition.h"
#include "recorder/syscall_effects.h"
#include "recorder/vdso.h"

namespace backstep::record {
namespace {

constexpr std::uint64_t kPage = 4096;

// A signal the kernel raised for the instruction that faulted: delivered at
// once (the emulator raises it again at the same instruction).
bool Synchronous(int sig, int code) {
  const bool fault_signal = sig == SIGSEGV || sig == SIGBUS || sig == SIGILL || sig == SIGFPE ||
                            sig == SIGTRAP || sig == SIGSYS;
  return fault_signal && code > 0;
}

std::string Errno() { return std::strerror(errno); }

class NativeSession {
 public:
  NativeSession(const NativeOptions& options, Tracee tracee, NativeLog::Cpuid cpuid,
                std::string log_path)
      : options_(options),
        tracee_(std::move(tracee)),
        pid_(tracee_.pid()),
        log_path_(std::move(log_path)) {
    log_.cpuid = cpuid;
  }

  core::Status Start();
  core::Status Run();
  NativeLog& log() { return log_; }
  NativeResult& result() { return result_; }
  int cpu() const { return cpu_; }  // the program's (after Start)

 private:
  core::Status OnSyscall();
  // At a signal-delivery-stop: delivers it now (*deliver) when it is the one
  // pending at the last system call's return, and logs it there.
  bool DeliverAtSyscallReturn(int sig, const user_regs_struct& regs, int* deliver);
  bool SignalPending() const;
  // At the exit stop: the memory the kernel wrote for `call`.
  void CollectWrites(LoggedSyscall* call, bool full_diff);
  core::Status EmulateRdtsc(const user_regs_struct& regs, bool* done);
  // The program's next stop; its children's meanwhile (OnChild).
  core::Expected<int> Wait();
  // A stop or the end of a child of the program's (or of theirs):
  // ServeUnrecordedChild, and children_ kept.
  void OnChild(pid_t child, int status);
  void Finish(int status);
  // At the exit stop of the call just logged: a snapshot when one is due.
  core::Status MaybeSnapshot();
  // rt_sigaction / sigaltstack at entry: what the call would set (kept
  // in signals_ when it succeeds).
  void ReadSignalSetup(const user_regs_struct& entry);

  const NativeOptions& options_;
  GivenAnswers given_{GivenInputs{options_.getrandom, options_.kernel_answers,
                                  options_.random_reads, options_.file_stats}};
  Tracee tracee_;
  const pid_t pid_;
  const std::string log_path_;
  NativeLog log_;
  SignalSetup signals_;
  std::optional<std::pair<int, KernelSigaction>> new_action_;
  std::vector<std::uint8_t> new_altstack_;
  std::chrono::steady_clock::time_point last_snapshot_ = std::chrono::steady_clock::now();
  std::uint64_t last_snapshot_syscall_ = 0;
  NativeResult result_;
  AddressSpace entry_memory_;  // writable memory at the entry of an unknown system call
  std::vector<Range> ranges_;  // the current call's output buffers (reused: no allocation)
  std::vector<iovec> local_iov_, remote_iov_;
  // Signals that arrived while the program computed, with their siginfo:
  // the first is queued again when the next system call returns.
  std::vector<siginfo_t> held_;
  std::optional<siginfo_t> requeued_;  // the one queued again (its siginfo restored)
  // The program is at a system call's return with a signal pending: the
  // next stop, at `exit_rip_`, delivers it before any instruction runs.
  bool pending_at_exit_ = false;
  // A call a discarded signal interrupted (not logged): the kernel restarts it.
  std::optional<LoggedSyscall> interrupted_;
  std::uint64_t exit_rip_ = 0;
  bool ended_ = false;
  // The program's descendants still attached: waited for at the end. Only
  // they: the recorder's other children (a test's, a caller's) are not its.
  std::set<pid_t> children_;
  int cpu_ = 0;
};

core::Status NativeSession::Start() {
  user_regs_struct regs{};
  if (core::Status s = tracee_.GetRegs(&regs); !s.ok()) return s;
  // One CPU for the program (and the recorder: RecordNative). Without CPUID
  // faulting the APIC ids in CPUID differ between CPUs: that CPU is logged.
  // With it, a program on another CPU than the recorder would make the CPU
  // switch to and from the idle thread, which has no CPUID faulting, at each
  // stop (CpuidFaultingForThisThread: up to 9x the cost per system call).
  cpu_ = FirstAllowedCpu();
  if (core::Status s = PinToCpu(pid_, cpu_); !s.ok()) return s;
  if (log_.cpuid == NativeLog::Cpuid::kPortable) {
    if (core::Status s = EnableCpuidFaulting(tracee_); !s.ok()) return s;
  } else {
    log_.cpuid = NativeLog::Cpuid::kHost;
    log_.cpu = cpu_;
    log_.cpu_signature = CpuSignature();
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
  return InstallSyscallTrap(tracee_);
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

void NativeSession::CollectWrites(LoggedSyscall* call, bool full_diff) {
  const user_regs_struct& e = call->entry;
  const std::uint64_t nr = e.orig_rax, result = call->exit.rax;
  const std::uint64_t args[6] = {e.rdi, e.rsi, e.rdx, e.r10, e.r8, e.r9};
  const bool failed = result > ~std::uint64_t{4095};
  std::vector<Range>& ranges = ranges_;
  ranges.clear();
  if (nr == kSysMmap && !failed && !(args[3] & MAP_ANONYMOUS)) {
    // A file mapping: materialization maps anonymous memory and writes this.
    std::vector<std::uint8_t> contents((args[1] + kPage - 1) / kPage * kPage);
    tracee_.ReadMemoryZeroFill(result, contents);
    ForEachNonZeroRun(contents, [&](std::size_t offset, std::size_t length) {
      call->writes.push_back(
          {result + offset, {contents.begin() + offset, contents.begin() + offset + length}});
    });
    return;
  }
  if (full_diff) {
    ++result_.full_diffs;
    entry_memory_.Diff(tracee_, &ranges);
  } else {
    KnownOutputs(nr, args, result, &ranges);
  }
  if (ranges.empty()) return;
  call->writes.reserve(ranges.size());
  local_iov_.clear();
  remote_iov_.clear();
  std::size_t total = 0;
  for (const Range& r : ranges) {
    LoggedWrite& w = call->writes.emplace_back();
    w.address = r.start;
    w.bytes.resize(r.size);
    local_iov_.push_back({w.bytes.data(), w.bytes.size()});
    remote_iov_.push_back({reinterpret_cast<void*>(r.start), r.size});
    total += r.size;
  }
  // All of them in one process_vm_readv (up to IOV_MAX buffers at a time);
  // when one is not all readable, each is read as far as it goes (from
  // /proc/PID/mem, as the rest of the recorder reads), the same bytes.
  constexpr std::size_t kIovMax = 1024;
  std::size_t done = 0;
  for (std::size_t i = 0; i < local_iov_.size(); i += kIovMax) {
    const std::size_t n = std::min(kIovMax, local_iov_.size() - i);
    std::size_t want = 0;
    for (std::size_t k = i; k < i + n; ++k) want += local_iov_[k].iov_len;
    const ssize_t got = process_vm_readv(pid_, &local_iov_[i], n, &remote_iov_[i], n, 0);
    if (got != static_cast<ssize_t>(want)) break;
    done += want;
  }
  if (done == total) return;
  for (LoggedWrite& w : call->writes) w.bytes.resize(tracee_.ReadMemory(w.address, w.bytes));
  std::erase_if(call->writes, [](const LoggedWrite& w) { return w.bytes.empty(); });
}

core::Status NativeSession::OnSyscall() {
  LoggedSyscall call;
  if (core::Status s = tracee_.GetRegs(&call.entry); !s.ok()) return s;
  const user_regs_struct& e = call.entry;
  const std::uint64_t nr = e.orig_rax;
  std::uint64_t clone_flags = e.rdi;
  if (nr == SYS_clone3 &&
      tracee_.ReadMemory(e.rdi, {reinterpret_cast<std::uint8_t*>(&clone_flags), 8}) != 8)
    clone_flags = CLONE_THREAD;
  if ((nr == SYS_clone || nr == SYS_clone3) && (clone_flags & CLONE_THREAD)) {
    return core::Status::Unsupported(
        "the program creates a thread (clone with CLONE_THREAD at " + core::HexU64(e.rip - 2) +
        "): --engine native records single-threaded programs only (use --engine ptrace)");
  }
  // fork/vfork/clone of a process: the parent is recorded (the child runs:
  // ServeUnrecordedChild). A CLONE_VM child writes the parent's memory.
  const bool shares_memory =
      nr == SYS_vfork || ((nr == SYS_clone || nr == SYS_clone3) && (clone_flags & CLONE_VM));
  if (nr == SYS_execve || nr == SYS_execveat) {
    return core::Status::Unsupported("the program calls execve (at " + core::HexU64(e.rip - 2) +
                                     "): not supported by --engine native");
  }
  if (nr == kSysRseq) {
    // Skipped, ENOSYS, as the other engines (the kernel would write the rseq area).
    user_regs_struct skip = e;
    skip.orig_rax = ~std::uint64_t{0};
    skip.rax = static_cast<std::uint64_t>(-ENOSYS);
    if (core::Status s = tracee_.SetRegs(skip); !s.ok()) return s;
  }
  ReadSignalSetup(e);
  // A held signal is queued again: delivered as this call returns, or it
  // interrupts the call at once if the call would wait (pause, read...),
  // as when it arrives there natively.
  if (!held_.empty() && !requeued_) {
    requeued_ = held_.front();
    held_.erase(held_.begin());
    syscall(SYS_tgkill, pid_, pid_, requeued_->si_signo);
  }
  const std::uint64_t args[6] = {e.rdi, e.rsi, e.rdx, e.r10, e.r8, e.r9};
  ranges_.clear();
  const bool full_diff =
      shares_memory || (!ChangesMappings(nr) && !KnownOutputs(nr, args, 0, &ranges_));
  if (full_diff) {
    if (core::Status s = entry_memory_.Init(tracee_); !s.ok()) return s;
  }
  // Run it to its exit stop (signals are delivered only on the way back to
  // the program, after it).
  while (true) {
    if (ptrace(PTRACE_SYSCALL, pid_, nullptr, 0) != 0)
      return core::Status::IOError("PTRACE_SYSCALL: " + Errno());
    core::Expected<int> status = Wait();
    if (!status.ok()) return status.status();
    if (WIFEXITED(*status) || WIFSIGNALED(*status)) {
      call.exit = call.entry;  // exit, exit_group (or killed in the call)
      log_.syscalls.push_back(std::move(call));
      ++result_.syscalls;
      Finish(*status);
      return core::Status::Ok();
    }
    if (WSTOPSIG(*status) == (SIGTRAP | 0x80)) break;
    const int event = *status >> 16;
    unsigned long born = 0;
    if ((event == PTRACE_EVENT_FORK || event == PTRACE_EVENT_VFORK ||
         event == PTRACE_EVENT_CLONE) &&
        ptrace(PTRACE_GETEVENTMSG, pid_, nullptr, &born) == 0 && born > 0)
      children_.insert(static_cast<pid_t>(born));
  }
  if (core::Status s = tracee_.GetRegs(&call.exit); !s.ok()) return s;
  const std::uint64_t kernel_result = call.exit.rax;
  if (core::Status s = given_.Apply(tracee_, nr, args, &call.exit.rax); !s.ok()) return s;
  if (call.exit.rax != kernel_result) {
    if (core::Status s = tracee_.SetRegs(call.exit); !s.ok()) return s;
  }
  if (nr == SYS_restart_syscall && interrupted_) {
    // The kernel resumes the call a discarded signal interrupted (nanosleep
    // with -ERESTART_RESTARTBLOCK): the emulated program, which never saw
    // the interruption, is still in that call.
    call.entry = interrupted_->entry;
  }
  interrupted_.reset();
  // Whether a signal is pending as the call returns. The kernel's result
  // says so for one that interrupted the call (-ERESTART*); a call may
  // raise one (kill, tgkill, a mask change, SIGPIPE with -EPIPE...) and the
  // recorder queued one at its entry (requeued_). Otherwise the call could
  // not have raised one: one that arrived from elsewhere while it ran is
  // not looked for (two PTRACE_PEEKSIGINFO saved per call); its delivery
  // stop comes next and it is held, as one arriving just after the return.
  const bool succeeded = call.exit.rax <= ~std::uint64_t{4095};
  pending_at_exit_ = (!succeeded || !CannotRaiseSignal(nr) || requeued_) && SignalPending();
  exit_rip_ = call.exit.rip;
  // Interrupted by a signal (it is pending): the kernel runs the call again
  // unless a handler runs; logged only with that signal.
  if (RestartsSyscall(call.exit.rax) && !pending_at_exit_) return core::Status::Ok();
  CollectWrites(&call, full_diff);
  if (succeeded && new_action_) signals_.actions[new_action_->first] = new_action_->second;
  if (succeeded && !new_altstack_.empty()) signals_.altstack = new_altstack_;
  log_.syscalls.push_back(std::move(call));
  ++result_.syscalls;
  if (pending_at_exit_ || nr == kSysRseq) return core::Status::Ok();
  return MaybeSnapshot();
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

core::Status NativeSession::MaybeSnapshot() {
  const std::uint64_t count = log_.syscalls.size();
  const bool by_count =
      options_.snapshot_syscalls && count - last_snapshot_syscall_ >= options_.snapshot_syscalls;
  const bool by_time = options_.snapshot_ms && !by_count &&
                       std::chrono::steady_clock::now() - last_snapshot_ >=
                           std::chrono::milliseconds(options_.snapshot_ms);
  if (!by_count && !by_time) return core::Status::Ok();
  core::Expected<Snapshot> snapshot = TakeSnapshot(tracee_, signals_);
  if (!snapshot.ok()) return snapshot.status();
  snapshot->syscall = count;
  snapshot->rdtsc = log_.rdtsc.size();
  const std::string path = log_path_ + ".snap" + std::to_string(log_.snapshots.size());
  if (core::Status s = WriteSnapshot(*snapshot, path); !s.ok()) return s;
  log_.snapshots.push_back({count, path.substr(path.rfind('/') + 1)});
  ++result_.snapshots;
  for (const LoggedWrite& run : snapshot->memory) result_.snapshot_bytes += run.bytes.size();
  last_snapshot_ = std::chrono::steady_clock::now();
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
      deliver = sig;
      continue;
    }
    held_.push_back(info);
    ++result_.held_signals;
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

}  // namespace

bool CpuidFaultingAvailable() {
  // Setting "cpuid enabled" changes nothing, and fails without the feature.
  return syscall(SYS_arch_prctl, ARCH_SET_CPUID, 1) == 0;
}

ProgramEnvironment::ProgramEnvironment(NativeLog::Cpuid cpuid) {
  if (cpuid != NativeLog::Cpuid::kHost) return;
  const char* old = getenv("GLIBC_TUNABLES");
  had_ = old != nullptr;
  if (had_) saved_ = old;
  const std::string value = had_ && *old ? saved_ + ":" + kHostCpuidTunables : kHostCpuidTunables;
  changed_ = setenv("GLIBC_TUNABLES", value.c_str(), 1) == 0;
}

ProgramEnvironment::~ProgramEnvironment() {
  if (!changed_) return;
  if (had_) {
    setenv("GLIBC_TUNABLES", saved_.c_str(), 1);
  } else {
    unsetenv("GLIBC_TUNABLES");
  }
}

core::Expected<NativeResult> RecordNative(const NativeOptions& options,
                                          const std::string& log_path) {
  const NativeLog::Cpuid cpuid =
      CpuidFaultingAvailable() ? NativeLog::Cpuid::kPortable : NativeLog::Cpuid::kHost;
  if (cpuid == NativeLog::Cpuid::kHost && options.portable_cpuid) {
    return core::Status::Unsupported(
        "--engine native --cpuid portable: this machine cannot make CPUID fault (no cpuid_fault "
        "flag), so the program would see the host's CPUID; record without --cpuid portable "
        "(and materialize on this machine)");
  }
  // The program's environment (and the hash the log keeps of it).
  const ProgramEnvironment environment(cpuid);
  core::Expected<Tracee> tracee = Tracee::Spawn(options.spawn);
  if (!tracee.ok()) return tracee.status();
  NativeSession session(options, std::move(*tracee), cpuid, log_path);
  if (core::Status s = session.Start(); !s.ok()) return s;
  // The recorder's thread runs on the program's CPU (a stop and a resume
  // are then a switch between the two, rr pins so too) and faults CPUID as
  // well (cpuid.h: CpuidFaultingForThisThread): those switches then leave
  // the CPU's faulting setting alone.
  const ThreadOnCpu pinned(session.cpu());
  const CpuidFaultingForThisThread faulting(cpuid == NativeLog::Cpuid::kPortable);
  if (core::Status s = session.Run(); !s.ok()) return s;
  if (core::Status s = WriteNativeLog(session.log(), log_path); !s.ok()) return s;
  return session.result();
}

}  // namespace backstep::record
