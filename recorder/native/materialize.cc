#include "recorder/native/materialize.h"

#include <cpuid.h>
#include <sched.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <functional>
#include <map>
#include <string>
#include <utility>
#include <vector>

extern char** environ;

#include "backstep/core/hex.h"
#include "recorder/emu/emu_recorder.h"
#include "recorder/native/interval.h"
#include "recorder/native/mapping_names.h"
#include "recorder/native/snapshot.h"
#include "recorder/native/tsc_faulting.h"
#include "recorder/signal_disposition.h"
#include "recorder/syscall_effects.h"
#include "recorder/usercorn_sink.h"

namespace backstep::record {
namespace {

constexpr std::uint64_t kTf = 1u << 8, kRf = 1u << 16;

// Forwards everything to the real sink, counting positions (instructions
// and signal deliveries) so that a divergence can name its position, and
// cuts the trace (Interval::cut) after the system calls it is told to.
class CountingSink : public RecordingSink {
 public:
  CountingSink(RecordingSink& sink, std::function<void()> cut)
      : sink_(sink), cut_(std::move(cut)) {}
  core::Status OnStart(const StartInfo& start) override { return sink_.OnStart(start); }
  void OnInstruction(const InstructionRecord& insn) override {
    ++positions_;
    sink_.OnInstruction(insn);
  }
  void OnSyscall(const SyscallRecord& syscall) override {
    sink_.OnSyscall(syscall);
    if (cut_pending_) cut_(), cut_pending_ = false;
  }
  // The system call the engine records next ends an interval.
  void CutAfterNextSyscall() { cut_pending_ = static_cast<bool>(cut_); }
  void OnSignal(const SignalRecord& signal) override {
    ++positions_;
    sink_.OnSignal(signal);
  }
  void OnKilled(int signal) override { sink_.OnKilled(signal); }
  core::Status Finish(bool exited) override { return sink_.Finish(exited); }
  std::uint64_t positions() const { return positions_; }

 private:
  RecordingSink& sink_;
  std::function<void()> cut_;
  bool cut_pending_ = false;
  std::uint64_t positions_ = 0;
};

// System calls run for real in the tracee (their effect is kernel state the
// emu engine reads back: mappings, fs base, signal dispositions, the frame);
// mmap of a file, shmat and shmdt as the calls that stand for them there
// (ProxyCall: anonymous memory for the file or segment).
bool RunsForReal(std::uint64_t nr) {
  switch (nr) {
    case SYS_mmap:
    case SYS_shmat:
    case SYS_shmdt:
    case SYS_munmap:
    case SYS_mprotect:
    case SYS_brk:
    case SYS_mremap:
    case SYS_madvise:
    case SYS_arch_prctl:
    case SYS_rt_sigaction:
    case SYS_rt_sigprocmask:
    case SYS_sigaltstack:
    case SYS_rt_sigreturn:
    case SYS_exit:
    case SYS_exit_group:
      return true;
    default:
      return false;
  }
}

class LogAnswerer : public SyscallSource {
 public:
  // Answers the log's system calls [first, limit): the recording stops
  // after limit - 1 unless the interval is the last (`last`: it runs to the
  // program's end). A snapshot after the log's last call (a program that
  // computes, then crashes) makes limit the log's size for the interval
  // before the last one: it still stops there.
  // `names`: follows the mapping calls that run (mapping_names.h).
  LogAnswerer(const NativeLog& log, CountingSink& sink, MappingNames& names, std::size_t first,
              std::size_t limit, bool last, std::string where)
      : log_(log),
        sink_(sink),
        names_(names),
        next_(first),
        limit_(limit),
        last_(last),
        where_(std::move(where)) {
    SkipRseq();
  }

  core::Expected<Stop> Answer(Tracee& tracee, const user_regs_struct& regs) override;
  bool EndsHere() const override { return ends_; }
  SignalAfter Signal() const override { return signal_; }
  std::size_t answered() const { return next_; }

 private:
  // rseq: the emu engine answers it itself (ENOSYS), as the record phase did.
  void SkipRseq() {
    while (next_ < log_.syscalls.size() && log_.syscalls[next_].entry.orig_rax == kSysRseq) ++next_;
  }
  // `index`: the log's system call the emulated one is compared with.
  core::Status Diverged(const user_regs_struct& regs, const std::string& difference) const {
    return Diverged(regs, difference, next_);
  }
  core::Status Diverged(const user_regs_struct& regs, const std::string& difference,
                        std::size_t index) const {
    return core::Status::Corruption(
        "materialization diverged from the recording at position " +
        std::to_string(sink_.positions()) + where_ + " (system call #" + std::to_string(index) +
        ", `syscall` at " + core::HexU64(regs.rip) + "): " + difference +
        (RdtscFaults() ? "" : std::string("; ") + RdtscNotFaultingHint()));
  }
  core::Status CompareEntry(const user_regs_struct& regs, const LoggedSyscall& logged) const;

  const NativeLog& log_;
  CountingSink& sink_;
  MappingNames& names_;
  std::size_t next_ = 0;
  const std::size_t limit_;
  const bool last_;
  const std::string where_;  // after the position: which interval, if not the whole run
  bool ends_ = false;
  SignalAfter signal_;  // of the call just answered
};

core::Status LogAnswerer::CompareEntry(const user_regs_struct& regs,
                                       const LoggedSyscall& logged) const {
  const user_regs_struct& e = logged.entry;
  std::string diff;
  auto check = [&](const char* name, std::uint64_t emulated, std::uint64_t recorded) {
    if (emulated == recorded) return;
    diff += std::string(diff.empty() ? "" : "; ") + name + " is " + core::HexU64(emulated) +
            " in the emulation, " + core::HexU64(recorded) + " in the log";
  };
  check("rax (the system call number)", regs.rax, e.orig_rax);
  check("rip", regs.rip + 2, e.rip);
  const std::pair<const char*, unsigned long long user_regs_struct::*> same[] = {
      {"rbx", &user_regs_struct::rbx},        {"rdx", &user_regs_struct::rdx},
      {"rsi", &user_regs_struct::rsi},        {"rdi", &user_regs_struct::rdi},
      {"rbp", &user_regs_struct::rbp},        {"rsp", &user_regs_struct::rsp},
      {"r8", &user_regs_struct::r8},          {"r9", &user_regs_struct::r9},
      {"r10", &user_regs_struct::r10},        {"r12", &user_regs_struct::r12},
      {"r13", &user_regs_struct::r13},        {"r14", &user_regs_struct::r14},
      {"r15", &user_regs_struct::r15},        {"fs_base", &user_regs_struct::fs_base},
      {"gs_base", &user_regs_struct::gs_base}};
  for (const auto& [name, field] : same) check(name, regs.*field, e.*field);
  // `syscall` saved the flags in r11 natively.
  check("eflags", regs.eflags & ~(kTf | kRf), e.r11 & ~(kTf | kRf));
  return diff.empty() ? core::Status::Ok() : Diverged(regs, diff);
}

core::Expected<Stop> LogAnswerer::Answer(Tracee& tracee, const user_regs_struct& regs) {
  if (next_ >= limit_) {
    return Diverged(regs, "the emulated program makes system call " + std::to_string(regs.rax) +
                              " after the last of the log's " + std::to_string(limit_) +
                              " system calls");
  }
  const LoggedSyscall& logged = log_.syscalls[next_];
  if (core::Status s = CompareEntry(regs, logged); !s.ok()) return s;
  // A signal interrupted the call (-ERESTART*): delivered after it, the
  // kernel turns the result into -EINTR or restarts the call in the frame
  // it writes, as it did natively.
  const bool interrupted = logged.signal_after && RestartsSyscall(logged.exit.rax);
  if (interrupted && DiscardsSignal(tracee.pid(), logged.signal_after)) {
    return Diverged(regs, "the log delivers signal " + std::to_string(logged.signal_after) +
                              " after the interrupted call, which the program ignores");
  }
  // A signal the recorded run got as this call returned: the engine
  // delivers it after (SyscallSource::Signal).
  signal_ = {logged.signal_after, logged.siginfo};
  const std::uint64_t nr = regs.rax, result = logged.exit.rax;
  const bool failed = result > ~std::uint64_t{4095};
  const bool ends = nr == SYS_exit || nr == SYS_exit_group;
  ++next_;
  ends_ = next_ == limit_ && !last_;
  // A snapshot follows this call: where an interval ends (ends_), or a
  // single pass cuts.
  const auto snapshot =
      std::lower_bound(log_.snapshots.begin(), log_.snapshots.end(), next_,
                       [](const SnapshotRef& r, std::size_t call) { return r.syscall < call; });
  if (snapshot != log_.snapshots.end() && snapshot->syscall == next_) sink_.CutAfterNextSyscall();
  SkipRseq();
  // rt_sigreturn's "result" is the rax it restores (-EINTR after an
  // interrupted call): it always runs.
  if (RunsForReal(nr) && (!failed || ends || nr == SYS_rt_sigreturn)) {
    user_regs_struct call = regs;
    // mmap at the address it got natively; a file mapping, or a shmat's
    // segment, becomes anonymous memory holding the logged contents (the
    // file's descriptor and the segment exist only in the recorded process).
    const bool stands_in = nr == SYS_mmap || nr == SYS_shmat || nr == SYS_shmdt;
    if (stands_in) {
      call.rax = ProxyCall(logged, &call);
      if (core::Status s = tracee.SetRegs(call); !s.ok()) return s;
    }
    core::Expected<Stop> stop = tracee.Step();
    if (!stop.ok() || stop->kind != Stop::kStepped) return stop;
    user_regs_struct after{};
    if (core::Status s = tracee.GetRegs(&after); !s.ok()) return s;
    if (after.rax != result) {
      return Diverged(regs,
                      "system call " + std::to_string(nr) + " returned " + core::HexU64(after.rax) +
                          " in the emulation, " + core::HexU64(result) + " in the log",
                      next_ - 1);
    }
    // Before the engine reads the maps this call changed.
    names_.Follow(logged);
    if (stands_in) {
      after.rdi = regs.rdi, after.rsi = regs.rsi, after.rdx = regs.rdx;
      after.r10 = regs.r10, after.r8 = regs.r8, after.r9 = regs.r9;
      if (core::Status s = tracee.SetRegs(after); !s.ok()) return s;
    }
  } else {
    user_regs_struct after = regs;
    after.rax = result;
    after.rip = regs.rip + 2;
    after.rcx = after.rip;
    after.r11 = regs.eflags;
    // The kernel's restart logic at the delivery reads the call's number
    // here (-1: not in a system call).
    after.orig_rax = interrupted ? nr : ~std::uint64_t{0};
    if (core::Status s = tracee.SetRegs(after); !s.ok()) return s;
  }
  for (const LoggedWrite& w : logged.writes) {
    if (core::Status s = tracee.WriteMemory(w.address, w.bytes); !s.ok()) return s;
  }
  return Stop{};
}

// The host CPU's cpuid as CPU `one` answers it, WithFirstCpuIds (they can
// change even there: cpuid.h): the calling thread runs there for that
// instruction only, so that the rest of the materialization (and the
// intervals running at once) may use every CPU.
CpuidResult HostCpuid(const cpu_set_t& one, const cpu_set_t& others, std::uint32_t leaf,
                      std::uint32_t subleaf) {
  sched_setaffinity(0, sizeof one, &one);
  CpuidResult r;
  __cpuid_count(leaf, subleaf, r.eax, r.ebx, r.ecx, r.edx);
  sched_setaffinity(0, sizeof others, &others);
  return WithFirstCpuIds(leaf, r);
}

std::string HowItEnded(const RecordResult& r) {
  switch (r.end) {
    case RecordResult::End::kExited:
      return "it exited with " + std::to_string(r.exit_code);
    case RecordResult::End::kKilled:
      return "signal " + std::to_string(r.signal) + " killed it";
    default:
      return "it stopped before its end";
  }
}

core::Status CheckSameWorld(const NativeLog& log) {
  char cwd[4096] = {};
  if (!getcwd(cwd, sizeof cwd) || log.cwd != cwd) {
    return core::Status::InvalidArgument("materialize in the recording's working directory (" +
                                         log.cwd + ")");
  }
  for (const LoggedFile& f : log.files) {
    struct stat st {};
    const bool same = stat(f.path.c_str(), &st) == 0 &&
                      static_cast<std::uint64_t>(st.st_ino) == f.inode &&
                      static_cast<std::uint64_t>(st.st_size) == f.size &&
                      static_cast<std::uint64_t>(st.st_mtim.tv_sec) * 1000000000u +
                              static_cast<std::uint64_t>(st.st_mtim.tv_nsec) ==
                          f.mtime_ns;
    if (!same) {
      return core::Status::InvalidArgument(f.path +
                                           " changed since the recording (it was mapped at exec)");
    }
  }
  return core::Status::Ok();
}

// For its lifetime, the process environment (which the emu engine's
// program inherits) is `strings`; restored after.
class ScopedEnviron {
 public:
  explicit ScopedEnviron(const std::vector<std::string>& strings) : saved_(environ) {
    for (const std::string& e : strings) pointers_.push_back(const_cast<char*>(e.c_str()));
    pointers_.push_back(nullptr);
    environ = pointers_.data();
  }
  ~ScopedEnviron() { environ = saved_; }
  ScopedEnviron(const ScopedEnviron&) = delete;
  ScopedEnviron& operator=(const ScopedEnviron&) = delete;

 private:
  char** saved_;
  std::vector<char*> pointers_;
};

}  // namespace

core::Expected<RecordResult> MaterializeInterval(const NativeLog& log, const Interval& interval,
                                                 RecordingSink& sink, std::uint64_t* positions) {
  if (!EmulatorAvailable()) {
    return core::Status::Unsupported(
        "materialization needs the emu engine: backstep was built without Unicorn");
  }
  if (log.argv.empty()) return core::Status::Corruption("native log: no program");
  // The program gets the recording's environment (its initial stack holds it).
  const ScopedEnviron environment(log.environment);
  if (core::Status s = CheckSameWorld(log); !s.ok()) return s;
  EmuOptions emu;
  emu.at_random.assign(log.at_random.begin(), log.at_random.end());
  emu.rdtsc.assign(log.rdtsc.begin() + static_cast<std::ptrdiff_t>(std::min<std::uint64_t>(
                                           interval.rdtsc, log.rdtsc.size())),
                   log.rdtsc.end());
  if (interval.snapshot) {
    emu.restore = [&](Tracee& proxy) { return RestoreSnapshot(proxy, log, *interval.snapshot); };
  }
  cpu_set_t saved, one;
  CPU_ZERO(&saved);
  CPU_ZERO(&one);
  if (log.cpuid == NativeLog::Cpuid::kHost) {
    if (log.cpu < 0 || log.cpu >= CPU_SETSIZE)
      return core::Status::Corruption("native log: bad CPU " + std::to_string(log.cpu));
    CPU_SET(log.cpu, &one);
    sched_getaffinity(0, sizeof saved, &saved);
    if (sched_setaffinity(0, sizeof one, &one) != 0) {
      return core::Status::Unsupported("materialization runs on CPU " + std::to_string(log.cpu) +
                                       " (the recording's CPUID), which this process cannot use");
    }
    const bool same = CpuSignature() == log.cpu_signature;
    sched_setaffinity(0, sizeof saved, &saved);
    if (!same) {
      return core::Status::Unsupported(
          "the recording saw another CPU's CPUID (no CPUID faulting where it was recorded): "
          "materialize it on a machine with the same CPU");
    }
    emu.cpuid = [&](std::uint32_t leaf, std::uint32_t subleaf) {
      return HostCpuid(one, saved, leaf, subleaf);
    };
  }
  CountingSink counting(sink, interval.cut);
  const std::size_t limit = interval.last ? log.syscalls.size() : interval.limit;
  // The files mapped before the interval (those a snapshot's process has
  // mapped as anonymous memory), then as its calls map them.
  MappingNames names = MappingNames::After(log, interval.first);
  emu.name_mappings = [&names](std::vector<Mapping>* maps) { names.Rename(maps); };
  LogAnswerer answerer(log, counting, names, interval.first, limit, interval.last, interval.where);
  emu.syscalls = &answerer;
  RecordOptions options;
  options.spawn.argv = log.argv;
  options.hide_vdso = true;
  options.portable_cpuid = true;
  options.reads = false;
  options.check_interval = 0;
  core::Expected<RecordResult> result = RecordEmulated(options, counting, emu);
  if (positions) *positions = counting.positions();
  if (!result.ok()) return result;
  const bool same_end =
      !interval.last
          ? result->end == RecordResult::End::kInterrupted
          : (log.end == NativeLog::End::kExited && result->end == RecordResult::End::kExited &&
             result->exit_code == log.status) ||
                (log.end == NativeLog::End::kKilled && result->end == RecordResult::End::kKilled &&
                 result->signal == log.status);
  if (answerer.answered() < limit || !same_end) {
    return core::Status::Corruption(
        "materialization diverged from the recording: the emulated program ended at position " +
        std::to_string(counting.positions()) + interval.where + " after " +
        std::to_string(answerer.answered()) + " of the log's " +
        std::to_string(log.syscalls.size()) + " system calls (" + HowItEnded(*result) +
        "), or not as the recorded one did");
  }
  return result;
}

core::Expected<RecordResult> Materialize(const NativeLog& log, UsercornSink& sink,
                                         const MaterializeOptions& options) {
  if (options.use_snapshots && !log.snapshots.empty())
    return MaterializeIntervals(log, sink, options);
  Interval whole;
  whole.limit = log.syscalls.size();
  whole.last = true;
  // Cut where the intervals meet, so that the trace is the parts' bytes.
  whole.cut = [&sink] { sink.Cut(); };
  return MaterializeInterval(log, whole, sink, nullptr);
}

}  // namespace backstep::record
