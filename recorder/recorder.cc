#include "recorder/recorder.h"

#include <signal.h>
#include <sys/ptrace.h>
#include <sys/syscall.h>
#include <x86intrin.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>

#include "recorder/address_space.h"
#include "recorder/cpu_state.h"
#include "recorder/cpuid.h"
#include "recorder/insn_decoder.h"
#include "recorder/syscall_effects.h"

namespace backstep::record {
namespace {

constexpr std::uint64_t kTf = 1u << 8, kRf = 1u << 16;
constexpr std::size_t kMaxInsn = 15;
constexpr std::uint64_t kPage = 4096;

std::string SignalName(int sig) {
  const char* abbrev = sigabbrev_np(sig);
  return abbrev ? std::string("SIG") + abbrev : "signal " + std::to_string(sig);
}

// Whether the program has a handler for `sig` (/proc/PID/status SigCgt).
bool HandlesSignal(pid_t pid, int sig) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("SigCgt:", 0) == 0) {
      const std::uint64_t mask = std::stoull(line.substr(7), nullptr, 16);
      return (mask >> (sig - 1)) & 1;
    }
  }
  return true;  // unknown: assume the worst
}

class Session {
 public:
  Session(const RecordOptions& options, RecordingSink& sink, Tracee tracee)
      : options_(options), sink_(sink), tracee_(std::move(tracee)) {}

  core::Status Start();
  // Runs to the end; the result's End says why it stopped.
  core::Status Run();
  RecordResult& result() { return result_; }

 private:
  const Decoded& DecodeAt(core::Address pc);
  core::Status StepOnce(bool* done);
  core::Status OnStepped(core::Address pc, const Decoded& d);
  core::Status OnSignal(core::Address pc, const Decoded& d, int sig, bool* done);
  core::Status OnEvent(const Stop& stop);
  core::Status EmulateRdtsc(core::Address pc, const Decoded& d);
  core::Status EmulateSyscallFailure(core::Address pc, const Decoded& d, std::int64_t error);
  // Reads `ranges` into writes_ (and the shadow).
  void Capture(std::span<const Range> ranges);
  core::Status SyscallEffects(const user_regs_struct& before, const user_regs_struct& after,
                              SyscallRecord* record, MapChanges* maps);
  core::Status Check(bool fp_fetched);

  const RecordOptions& options_;
  RecordingSink& sink_;
  Tracee tracee_;
  CpuLayout layout_;
  InsnDecoder decoder_;
  AddressSpace space_;
  RecordResult result_;
  user_regs_struct regs_{};  // before the next instruction
  std::vector<core::RegisterWrite> slots_, next_slots_, changes_;
  std::vector<std::uint8_t> xstate_;
  std::vector<Range> ranges_, changed_;
  std::vector<std::uint8_t> data_;                            // contents of writes_
  std::vector<std::pair<core::Address, std::size_t>> spans_;  // (address, size) into data_
  std::vector<core::MemoryAccess> writes_;
  int pending_signal_ = 0;
  core::Address last_pc_ = 0;
};

core::Status Session::Start() {
  if (options_.portable_cpuid) {
    if (core::Status s = EnableCpuidFaulting(tracee_); !s.ok()) return s;
  }
  if (core::Status s = tracee_.GetRegs(&regs_); !s.ok()) return s;
  if (core::Status s = tracee_.GetXState(&xstate_); !s.ok()) return s;
  slots_.resize(layout_.count());
  layout_.CollectGprs(regs_, slots_);
  layout_.CollectFp(xstate_, slots_);
  if (core::Status s = space_.Init(tracee_); !s.ok()) return s;
  core::Expected<std::vector<std::uint8_t>> auxv = tracee_.ReadAuxv();
  if (!auxv.ok()) return auxv.status();
  StartInfo start;
  start.pid = static_cast<std::uint64_t>(tracee_.pid());
  start.executable = tracee_.ExecutablePath();
  start.auxv = std::move(*auxv);
  start.mappings = space_.mappings();
  start.contents = [this](const Mapping& m, std::vector<std::uint8_t>* out) {
    out->assign(m.size, 0);
    if (m.name.rfind("[vvar", 0) != 0 && m.name != "[vsyscall]")
      tracee_.ReadMemoryZeroFill(m.start, *out);
    return core::Status::Ok();
  };
  start.registers = slots_;
  start.pc = regs_.rip;
  return sink_.OnStart(start);
}

const Decoded& Session::DecodeAt(core::Address pc) {
  const Decoded* cached = decoder_.Find(pc);
  if (cached) {
    const Mapping* m = space_.Find(pc);
    if (!m || !m->write) return *cached;  // code that cannot change without a syscall
  }
  std::uint8_t bytes[kMaxInsn];
  const std::size_t n = tracee_.ReadMemory(pc, bytes);
  return decoder_.Decode(pc, std::span<const std::uint8_t>(bytes, n));
}

core::Status Session::Run() {
  bool done = false;
  while (!done) {
    if (options_.max_instructions && result_.instructions >= *options_.max_instructions) {
      result_.end = RecordResult::End::kMaxInstructions;
      break;
    }
    if (options_.progress && result_.instructions % 4096 == 0 &&
        !options_.progress(result_.instructions)) {
      result_.end = RecordResult::End::kInterrupted;
      break;
    }
    if (core::Status s = StepOnce(&done); !s.ok()) return s;
  }
  if (tracee_.alive()) {
    // Cut short: a last check that the trace holds what memory holds.
    if (core::Status s = Check(false); !s.ok()) return s;
    tracee_.Kill();
  }
  return core::Status::Ok();
}

core::Status Session::StepOnce(bool* done) {
  const core::Address pc = regs_.rip;
  const Decoded& d = DecodeAt(pc);
  if (d.breakpoint) {
    return core::Status::Unsupported(
        "the program executes a breakpoint or software interrupt "
        "instruction (int3/int n): not supported yet");
  }
  if (d.syscall && regs_.rax == kSysRseq) return EmulateSyscallFailure(pc, d, -ENOSYS);
  const Decoded decoded = d;  // the cache may change below
  core::Expected<Stop> stop = tracee_.Step(pending_signal_);
  pending_signal_ = 0;
  if (!stop.ok()) return stop.status();
  switch (stop->kind) {
    case Stop::kStepped:
      return OnStepped(pc, decoded);
    case Stop::kSignal:
      return OnSignal(pc, decoded, stop->signal, done);
    case Stop::kEvent:
      return OnEvent(*stop);
    case Stop::kExited:
    case Stop::kKilled: {
      // exit/exit_group (or a fatal signal): the instruction ran, nothing is left to read.
      *done = true;
      const bool exited = stop->kind == Stop::kExited;
      result_.end = exited ? RecordResult::End::kExited : RecordResult::End::kKilled;
      result_.exit_code = stop->exit_code;
      result_.signal = stop->signal;
      if (exited && decoded.syscall) {
        sink_.OnInstruction({pc, decoded.size, {}, {}});
        SyscallRecord r;
        r.number = static_cast<std::uint32_t>(regs_.rax);
        r.result = 0;
        const std::uint64_t args[6] = {regs_.rdi, regs_.rsi, regs_.rdx,
                                       regs_.r10, regs_.r8,  regs_.r9};
        std::copy(std::begin(args), std::end(args), r.args);
        sink_.OnSyscall(r);
        ++result_.instructions;
        ++result_.syscalls;
      }
      return core::Status::Ok();
    }
  }
  return core::Status::Ok();
}

void Session::Capture(std::span<const Range> ranges) {
  for (const Range& r : ranges) {
    const std::size_t at = data_.size();
    data_.resize(at + r.size);
    const std::size_t n = tracee_.ReadMemory(r.start, std::span(data_).subspan(at, r.size));
    data_.resize(at + n);
    if (n == 0) continue;
    if (!r.maybe) {
      space_.Note(r.start, std::span(data_).subspan(at, n));
      spans_.push_back({r.start, n});
      continue;
    }
    // A maybe-write: keep only what differs from the trace's view.
    changed_.clear();
    space_.Changed(r.start, std::span(data_).subspan(at, n), &changed_);
    std::vector<std::uint8_t> bytes(data_.begin() + at, data_.end());
    data_.resize(at);
    for (const Range& c : changed_) {
      const std::size_t from = c.start - r.start;
      data_.insert(data_.end(), bytes.begin() + from, bytes.begin() + from + c.size);
      space_.Note(c.start, std::span(bytes).subspan(from, c.size));
      spans_.push_back({c.start, c.size});
    }
  }
}

core::Status Session::OnStepped(core::Address pc, const Decoded& d) {
  user_regs_struct after{};
  if (core::Status s = tracee_.GetRegs(&after); !s.ok()) return s;
  if (d.syscall && (after.r11 & (kTf | kRf))) {
    // Single-stepping leaks TF into the flags `syscall` saves in r11.
    after.r11 &= ~(kTf | kRf);
    if (core::Status s = tracee_.SetRegs(after); !s.ok()) return s;
  }
  if (d.pushf) {
    std::uint64_t flags = 0;
    if (tracee_.ReadMemory(after.rsp, {reinterpret_cast<std::uint8_t*>(&flags), 8}) == 8 &&
        (flags & (kTf | kRf))) {
      flags &= ~(kTf | kRf);
      if (core::Status s =
              tracee_.WriteMemory(after.rsp, {reinterpret_cast<std::uint8_t*>(&flags), 8});
          !s.ok())
        return s;
    }
  }
  next_slots_ = slots_;
  layout_.CollectGprs(after, next_slots_);
  const bool fetch_fp = d.fp || d.syscall;
  if (fetch_fp) {
    if (core::Status s = tracee_.GetXState(&xstate_); !s.ok()) return s;
    layout_.CollectFp(xstate_, next_slots_);
  }
  changes_.clear();
  DiffRegisters(layout_, slots_, next_slots_, 0, fetch_fp ? layout_.count() : layout_.gpr_count(),
                &changes_);
  data_.clear();
  spans_.clear();
  ranges_.clear();
  SyscallRecord sys;
  MapChanges maps;
  if (d.syscall) {
    if (core::Status s = SyscallEffects(regs_, after, &sys, &maps); !s.ok()) return s;
  } else {
    InsnDecoder::Writes(d, regs_, after, &ranges_);
    if (d.unknown_writes) {
      ++result_.full_diffs;
      space_.Diff(tracee_, &ranges_);
    }
    for (const Range& r : ranges_) {
      const Mapping* m = space_.Find(r.start);
      if (m && m->exec) decoder_.Invalidate();  // self-modifying code
    }
    Capture(ranges_);
  }
  slots_.swap(next_slots_);
  regs_ = after;
  last_pc_ = pc;
  ++result_.instructions;
  if (options_.check_interval && result_.instructions % options_.check_interval == 0) {
    if (core::Status s = Check(fetch_fp); !s.ok()) return s;
  }
  writes_.clear();
  for (const auto& [address, size] : spans_) {
    writes_.push_back({address, std::span<const std::uint8_t>(data_).subspan(0, 0)});
  }
  std::size_t offset = 0;
  for (std::size_t i = 0; i < spans_.size(); ++i) {
    writes_[i].data = std::span<const std::uint8_t>(data_).subspan(offset, spans_[i].second);
    offset += spans_[i].second;
  }
  const std::uint8_t size = d.size ? d.size : static_cast<std::uint8_t>(0);
  if (!d.syscall) {
    sink_.OnInstruction({pc, size, changes_, writes_});
    return core::Status::Ok();
  }
  ++result_.syscalls;
  sink_.OnInstruction({pc, size, {}, {}});
  sys.writes = writes_;
  sys.registers = changes_;
  sys.unmapped = maps.unmapped;
  sys.mapped = maps.mapped;
  sys.protected_ = maps.reprotected;
  sink_.OnSyscall(sys);
  return core::Status::Ok();
}

core::Status Session::SyscallEffects(const user_regs_struct& before, const user_regs_struct& after,
                                     SyscallRecord* r, MapChanges* maps) {
  const std::uint64_t nr = before.rax;
  const std::uint64_t args[6] = {before.rdi, before.rsi, before.rdx,
                                 before.r10, before.r8,  before.r9};
  r->number = static_cast<std::uint32_t>(nr);
  r->result = after.rax;
  std::copy(std::begin(args), std::end(args), r->args);
  const bool failed = after.rax > ~std::uint64_t{4095};
  if (ChangesMappings(nr) && !failed) {
    std::vector<Range> fresh;
    const auto pages = [](std::uint64_t n) { return (n + kPage - 1) / kPage * kPage; };
    if (nr == kSysMmap) fresh.push_back({after.rax, pages(args[1])});
    if (nr == kSysMremap) fresh.push_back({after.rax, pages(args[2])});
    if (core::Status s = space_.Update(tracee_, fresh, maps); !s.ok()) return s;
    decoder_.Invalidate();
    // New mappings' contents: only the non-zero runs (a fresh mapping reads as zeros).
    for (const Range& c : maps->contents) {
      std::vector<std::uint8_t> buf(c.size);
      tracee_.ReadMemoryZeroFill(c.start, buf);
      std::size_t i = 0;
      while (i < buf.size()) {
        while (i < buf.size() && buf[i] == 0) ++i;
        std::size_t j = i, zeros = 0;
        while (j < buf.size() && zeros < 64) zeros = buf[j++] == 0 ? zeros + 1 : 0;
        const std::size_t end = j - zeros;
        if (end > i) {
          const std::size_t at = data_.size();
          data_.insert(data_.end(), buf.begin() + i, buf.begin() + end);
          spans_.push_back({c.start + i, end - i});
          (void)at;
        }
        i = j;
      }
    }
  }
  if (KnownOutputs(nr, args, after.rax, &ranges_)) {
    Capture(ranges_);
  } else {
    ++result_.full_diffs;
    ranges_.clear();
    space_.Diff(tracee_, &ranges_);
    Capture(ranges_);
  }
  return core::Status::Ok();
}

core::Status Session::Check(bool fp_fetched) {
  std::vector<Range> missed;
  space_.Diff(tracee_, &missed);
  for (const Range& r : missed) {
    result_.missed_bytes += r.size;
    if (getenv("BACKSTEP_RECORD_DEBUG")) {
      std::fprintf(
          stderr, "record: missed write 0x%llx+%llu by instruction %llu or before (pc 0x%llx)\n",
          static_cast<unsigned long long>(r.start), static_cast<unsigned long long>(r.size),
          static_cast<unsigned long long>(result_.instructions),
          static_cast<unsigned long long>(last_pc_));
    }
  }
  Capture(missed);
  if (!fp_fetched) {
    if (core::Status s = tracee_.GetXState(&xstate_); !s.ok()) return s;
    std::vector<core::RegisterWrite> fp = slots_;
    layout_.CollectFp(xstate_, fp);
    const std::size_t before = changes_.size();
    DiffRegisters(layout_, slots_, fp, layout_.gpr_count(), layout_.count(), &changes_);
    result_.missed_registers += changes_.size() - before;
    slots_ = fp;
  }
  return core::Status::Ok();
}

core::Status Session::OnSignal(core::Address pc, const Decoded& d, int sig, bool* done) {
  if (sig == SIGSEGV && (d.rdtsc || d.rdtscp)) return EmulateRdtsc(pc, d);
  if (sig == SIGSEGV && options_.portable_cpuid && IsCpuidAt(tracee_, pc)) {
    user_regs_struct after = regs_;  // CPUID faulting: answer from the portable table
    AnswerCpuid(&after);
    if (core::Status s = tracee_.SetRegs(after); !s.ok()) return s;
    return OnStepped(pc, d);
  }
  if (sig == SIGINT) {
    // Ctrl-C reaches the whole foreground process group: stop cleanly.
    result_.end = RecordResult::End::kInterrupted;
    *done = true;
    return core::Status::Ok();
  }
  const std::string name = SignalName(sig);
  if (sig == SIGSTOP || sig == SIGTSTP || sig == SIGTTIN || sig == SIGTTOU) {
    return core::Status::Unsupported("the program received " + name +
                                     ": stop signals are not supported yet");
  }
  if (HandlesSignal(tracee_.pid(), sig)) {
    return core::Status::Unsupported("the program received " + name +
                                     ", which it handles: signal handlers are not supported yet");
  }
  user_regs_struct now{};
  if (core::Status s = tracee_.GetRegs(&now); !s.ok()) return s;
  if (std::memcmp(&now, &regs_, sizeof now) != 0) {
    return core::Status::Unsupported("a signal (" + name +
                                     ") interrupted a system call: not supported yet");
  }
  // Not handled: deliver it with the next step (ignored: it vanishes; fatal: the
  // program ends, and the recording with it).
  pending_signal_ = sig;
  return core::Status::Ok();
}

core::Status Session::OnEvent(const Stop& stop) {
  unsigned long msg = 0;
  ptrace(PTRACE_GETEVENTMSG, tracee_.pid(), nullptr, &msg);
  if (stop.event == PTRACE_EVENT_EXEC) {
    return core::Status::Unsupported(
        "the program calls execve: recording across exec is not "
        "supported yet");
  }
  if (msg != 0) kill(static_cast<pid_t>(msg), SIGKILL);  // the new child or thread
  if (stop.event == PTRACE_EVENT_CLONE) {
    return core::Status::Unsupported(
        "the program creates a thread (clone): multi-threaded "
        "programs are not supported yet");
  }
  return core::Status::Unsupported(
      "the program creates a process (fork/vfork): recording "
      "child processes is not supported yet");
}

core::Status Session::EmulateRdtsc(core::Address pc, const Decoded& d) {
  user_regs_struct after = regs_;
  unsigned aux = 0;
  const std::uint64_t tsc = d.rdtscp ? __rdtscp(&aux) : __rdtsc();
  after.rax = tsc & 0xffffffff;
  after.rdx = tsc >> 32;
  if (d.rdtscp) after.rcx = aux;
  after.rip = pc + d.size;
  if (core::Status s = tracee_.SetRegs(after); !s.ok()) return s;
  Decoded plain = d;
  plain.rdtsc = plain.rdtscp = false;
  return OnStepped(pc, plain);
}

core::Status Session::EmulateSyscallFailure(core::Address pc, const Decoded& d,
                                            std::int64_t error) {
  // What `syscall` would leave: rax = -errno, rcx = next rip, r11 = rflags.
  user_regs_struct after = regs_;
  after.rax = static_cast<std::uint64_t>(error);
  after.rcx = pc + d.size;
  after.r11 = regs_.eflags & ~(kTf | kRf);
  after.rip = pc + d.size;
  if (core::Status s = tracee_.SetRegs(after); !s.ok()) return s;
  return OnStepped(pc, d);
}

}  // namespace

core::Expected<RecordResult> Record(const RecordOptions& options, RecordingSink& sink) {
  core::Expected<Tracee> tracee = Tracee::Spawn(options.spawn);
  if (!tracee.ok()) return tracee.status();
  RecordOptions tuned = options;
  // NOTE: BACKSTEP_RECORD_CHECK=N checks every N instructions (debugging the decoder).
  if (const char* check = getenv("BACKSTEP_RECORD_CHECK"))
    tuned.check_interval = std::stoull(check);
  Session session(tuned, sink, std::move(*tracee));
  if (core::Status s = session.Start(); !s.ok()) return s;
  core::Status run = session.Run();
  const bool exited = session.result().end == RecordResult::End::kExited ||
                      session.result().end == RecordResult::End::kKilled;
  core::Status finish = sink.Finish(run.ok() && exited);
  if (!run.ok()) return run;
  if (!finish.ok()) return finish;
  return session.result();
}

}  // namespace backstep::record
