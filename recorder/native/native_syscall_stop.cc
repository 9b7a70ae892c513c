#include <sys/mman.h>
#include <sys/ptrace.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <optional>

#include "backstep/core/hex.h"
#include "recorder/native/native_session.h"
#include "recorder/signal_disposition.h"
#include "recorder/syscall_effects.h"

namespace backstep::record {
namespace {

constexpr std::uint64_t kPage = 4096;

std::uint64_t Pages(std::uint64_t n) { return (n + kPage - 1) / kPage * kPage; }

// The tracee's mapping (as /proc/PID/maps shows it now) that holds
// `address`, if any.
core::Expected<std::optional<Mapping>> MappingAt(const Tracee& tracee, std::uint64_t address) {
  core::Expected<std::vector<Mapping>> maps = tracee.ReadMaps();
  if (!maps.ok()) return maps.status();
  for (const Mapping& m : *maps) {
    if (address >= m.start && address < m.end()) return std::optional<Mapping>(m);
  }
  return std::optional<Mapping>();
}

// After a successful file mmap `call`: the file /proc/PID/maps names at the
// address it returned and the offset there, into call->mapped (nothing
// when the kernel shows anonymous memory there).
core::Status LogMappedFile(const Tracee& tracee, LoggedSyscall* call) {
  const std::uint64_t address = call->exit.rax;
  core::Expected<std::optional<Mapping>> m = MappingAt(tracee, address);
  if (!m.ok()) return m.status();
  if (*m && !(*m)->name.empty()) {
    call->mapped = {(*m)->name, (*m)->file_offset + (address - (*m)->start),
                    Pages(call->entry.rsi)};
  }
  return core::Status::Ok();
}

// The non-zero runs of [start, start + size) in the tracee, as writes of
// `call` (materialization writes them into the anonymous memory it maps).
void LogContents(const Tracee& tracee, std::uint64_t start, std::uint64_t size,
                 LoggedSyscall* call) {
  std::vector<std::uint8_t> contents(size);
  tracee.ReadMemoryZeroFill(start, contents);
  ForEachNonZeroRun(contents, [&](std::size_t offset, std::size_t length) {
    call->writes.push_back(
        {start + offset, {contents.begin() + offset, contents.begin() + offset + length}});
  });
}

// After a successful mremap `call` that grew a file mapping: the grown
// pages' contents (the file's next bytes), as writes of `call`.
// Materialization's mremap grows anonymous memory, which holds zeros there.
// Anonymous memory grows with zeros natively too: nothing to log (and not
// read: a realloc'd buffer may grow by gigabytes).
core::Status LogGrownFilePages(const Tracee& tracee, LoggedSyscall* call) {
  const std::uint64_t old_size = Pages(call->entry.rsi), new_size = Pages(call->entry.rdx);
  if (new_size <= old_size) return core::Status::Ok();
  const std::uint64_t grown = call->exit.rax + old_size;
  core::Expected<std::optional<Mapping>> m = MappingAt(tracee, grown);
  if (!m.ok()) return m.status();
  if (*m && !(*m)->name.empty() && (*m)->name[0] != '[') {
    LogContents(tracee, grown, new_size - old_size, call);
  }
  return core::Status::Ok();
}

// After a successful shmat `call`: the segment /proc/PID/maps shows at the
// address it returned, to its end, into call->mapped, and its contents as
// writes (materialization maps anonymous memory there and writes them).
core::Status LogAttachedSegment(const Tracee& tracee, LoggedSyscall* call) {
  const std::uint64_t address = call->exit.rax;
  core::Expected<std::optional<Mapping>> m = MappingAt(tracee, address);
  if (!m.ok()) return m.status();
  if (!*m) {
    return core::Status::Corruption("shmat returned " + core::HexU64(address) +
                                    ", where /proc/PID/maps shows nothing");
  }
  call->mapped = {(*m)->name, (*m)->file_offset + (address - (*m)->start), (*m)->end() - address};
  LogContents(tracee, address, (*m)->end() - address, call);
  return core::Status::Ok();
}

// Before shmdt `entry` runs: the attachment it would detach, into *mapped
// (the areas from its address on that continue the same segment, which an
// mprotect may have split); none when there is none (the call fails).
core::Status FindAttachedSegment(const Tracee& tracee, const user_regs_struct& entry,
                                 std::optional<LoggedFileMapping>* mapped) {
  core::Expected<std::vector<Mapping>> maps = tracee.ReadMaps();
  if (!maps.ok()) return maps.status();
  for (const Mapping& m : *maps) {
    if (mapped->has_value()) {
      LoggedFileMapping& s = **mapped;
      if (m.start != entry.rdi + s.size || m.name != s.path || m.file_offset != s.offset + s.size)
        break;
      s.size += m.size;
    } else if (m.start == entry.rdi && m.name.rfind("/SYSV", 0) == 0) {
      *mapped = LoggedFileMapping{m.name, m.file_offset, m.size};
    }
  }
  return core::Status::Ok();
}

}  // namespace

void NativeSession::CollectWrites(LoggedSyscall* call, bool full_diff) {
  const user_regs_struct& e = call->entry;
  const std::uint64_t nr = e.orig_rax, result = call->exit.rax;
  const std::uint64_t args[6] = {e.rdi, e.rsi, e.rdx, e.r10, e.r8, e.r9};
  const bool failed = result > ~std::uint64_t{4095};
  std::vector<Range>& ranges = ranges_;
  ranges.clear();
  if (nr == kSysMmap && !failed && !(args[3] & MAP_ANONYMOUS)) {
    // A file mapping: materialization maps anonymous memory and writes this.
    LogContents(tracee_, result, Pages(args[1]), call);
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
  // The buffer's calls come first in the log; a call its handler passed on
  // is logged as made at its site (syscall_buffer.h).
  std::optional<std::uint64_t> traced_site;
  if (buffer_) {
    if (buffer_->IsFlushStop(call.entry.rip)) return OnFlush(call.entry);
    if (core::Status s = DrainBuffer(); !s.ok()) return s;
    traced_site = buffer_->TracedSiteAt(call.entry.rip);
    if (traced_site) SyscallBuffer::LogAsSite(*traced_site, &call.entry);
  }
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
  if (core::Status s = RefuseBufferOverlap(e); !s.ok()) return s;
  if (buffer_ && shares_memory) {
    // The child runs in the program's memory, buffer included: its calls
    // must not land there. A vfork child runs while the program waits in
    // this call; a CLONE_VM child without CLONE_VFORK runs beside it, so the
    // buffer is off from then on.
    if (nr != SYS_vfork && !(clone_flags & CLONE_VFORK)) buffer_off_ = true;
    if (core::Status s = buffer_->TraceNext(tracee_, true); !s.ok()) return s;
  }
  if (nr == kSysRseq) {
    // Skipped, ENOSYS, as the other engines (the kernel would write the rseq area).
    user_regs_struct skip = e;
    skip.orig_rax = ~std::uint64_t{0};
    skip.rax = static_cast<std::uint64_t>(-ENOSYS);
    if (core::Status s = tracee_.SetRegs(skip); !s.ok()) return s;
  }
  ReadSignalSetup(e);
  std::optional<LoggedFileMapping> detaching;  // shmdt's attachment, logged if it succeeds
  if (nr == SYS_shmdt) {
    if (core::Status s = FindAttachedSegment(tracee_, e, &detaching); !s.ok()) return s;
  }
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
      return core::Status::IOError("PTRACE_SYSCALL: " + std::string(std::strerror(errno)));
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
  like_ = call.exit;  // fs_base as arch_prctl left it, for the buffer's next calls
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
  if (traced_site) {
    SyscallBuffer::LogAsSite(*traced_site, &call.exit);
    if (pending_at_exit_) {
      // The signal frame returns to the site: its own bytes again, for good.
      if (core::Status s = buffer_->Unpatch(tracee_, *traced_site); !s.ok()) return s;
      if (core::Status s = tracee_.SetRegs(call.exit); !s.ok()) return s;
    }
  } else if (buffer_ && pending_at_exit_) {
    if (core::Status s = buffer_->Unpatch(tracee_, e.rip - 2); !s.ok()) return s;
  }
  exit_rip_ = call.exit.rip;
  // Interrupted by a signal (it is pending): the kernel runs the call again
  // unless a handler runs; logged only with that signal.
  if (RestartsSyscall(call.exit.rax) && !pending_at_exit_) return core::Status::Ok();
  CollectWrites(&call, full_diff);
  if (nr == kSysMmap && succeeded && !(e.r10 & MAP_ANONYMOUS)) {
    if (core::Status s = LogMappedFile(tracee_, &call); !s.ok()) return s;
  }
  if (nr == kSysMremap && succeeded) {
    if (core::Status s = LogGrownFilePages(tracee_, &call); !s.ok()) return s;
  }
  if (nr == SYS_shmat && succeeded) {
    if (core::Status s = LogAttachedSegment(tracee_, &call); !s.ok()) return s;
  }
  if (nr == SYS_shmdt && succeeded) {
    if (!detaching) {
      return core::Status::Corruption("shmdt(" + core::HexU64(e.rdi) +
                                      ") succeeded where /proc/PID/maps showed no SysV segment");
    }
    call.mapped = std::move(detaching);
  }
  if (succeeded && new_action_) signals_.actions[new_action_->first] = new_action_->second;
  if (succeeded && !new_altstack_.empty()) signals_.altstack = new_altstack_;
  const user_regs_struct entry = call.entry;
  user_regs_struct exit_regs = call.exit;
  log_.syscalls.push_back(std::move(call));
  ++result_.syscalls;
  if (buffer_) {
    if (core::Status s = buffer_->TrackDescriptors(tracee_, nr, entry, exit_regs.rax); !s.ok())
      return s;
  }
  if (pending_at_exit_ || nr == kSysRseq) return UpdateTraceNext();
  if (core::Status s = MaybeSnapshot(); !s.ok()) return s;
  if (buffer_ && !traced_site) {
    // After the snapshot, which shows the site as it was.
    bool moved = false;
    if (core::Status s = buffer_->MaybePatch(tracee_, entry.rip - 2, entry, &exit_regs, &moved);
        !s.ok())
      return s;
    if (moved) {
      if (core::Status s = tracee_.SetRegs(exit_regs); !s.ok()) return s;
      result_.patched_sites = buffer_->patched_sites();
    }
  }
  return UpdateTraceNext();
}

}  // namespace backstep::record
