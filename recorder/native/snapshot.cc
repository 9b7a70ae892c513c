#include "recorder/native/snapshot.h"

#include <elf.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/ptrace.h>
#include <sys/shm.h>
#include <sys/syscall.h>
#include <sys/uio.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>

#include "backstep/core/hex.h"
#include "recorder/syscall_effects.h"

namespace backstep::record {
namespace {

constexpr std::uint64_t kPage = 4096;

// Mappings the kernel gives every process alike: never dumped or written.
bool KernelMapping(const std::string& name) {
  return name.rfind("[vvar", 0) == 0 || name == "[vdso]" || name == "[vsyscall]";
}

std::uint8_t Prot(const Mapping& m) {
  return (m.read ? PROT_READ : 0) | (m.write ? PROT_WRITE : 0) | (m.exec ? PROT_EXEC : 0);
}

// The blocked signals, from /proc/PID/status's SigBlk (hex).
std::uint64_t BlockedSignals(pid_t pid) {
  std::ifstream status("/proc/" + std::to_string(pid) + "/status");
  for (std::string line; std::getline(status, line);) {
    if (line.rfind("SigBlk:", 0) == 0) return std::strtoull(line.c_str() + 7, nullptr, 16);
  }
  return 0;
}

// The snapshot's mappings (or the proxy's, as SnapshotMappings) merged where
// adjacent with the same protection: a file mapping replayed as anonymous
// memory may merge with its neighbour, which changes no page.
std::vector<SnapshotMapping> Coalesced(std::vector<SnapshotMapping> in) {
  std::sort(in.begin(), in.end(),
            [](const SnapshotMapping& a, const SnapshotMapping& b) { return a.start < b.start; });
  std::vector<SnapshotMapping> out;
  for (const SnapshotMapping& m : in) {
    if (!out.empty() && out.back().start + out.back().size == m.start && out.back().prot == m.prot)
      out.back().size += m.size;
    else
      out.push_back(m);
  }
  return out;
}

core::Expected<std::vector<SnapshotMapping>> MappingsOf(const Tracee& tracee) {
  core::Expected<std::vector<Mapping>> maps = tracee.ReadMaps();
  if (!maps.ok()) return maps.status();
  std::vector<SnapshotMapping> out;
  for (const Mapping& m : *maps) {
    if (!KernelMapping(m.name)) out.push_back({m.start, m.size, Prot(m)});
  }
  return out;
}

// Runs system calls in the proxy at `at` (a `syscall` instruction written
// there; the snapshot's contents overwrite it later).
class Injector {
 public:
  Injector(Tracee& proxy, std::uint64_t at) : proxy_(proxy), at_(at) {}
  core::Expected<std::uint64_t> Call(std::uint64_t nr, std::span<const std::uint64_t> args) {
    return proxy_.InjectSyscall(proxy_.pid(), at_, nr, args);
  }
  // Runs it and requires `expected` (or success when not given).
  core::Status Require(std::uint64_t nr, std::span<const std::uint64_t> args, const char* what,
                       std::optional<std::uint64_t> expected = std::nullopt) {
    core::Expected<std::uint64_t> r = Call(nr, args);
    if (!r.ok()) return r.status();
    const bool good = expected ? *r == *expected : *r <= ~std::uint64_t{4095};
    if (good) return core::Status::Ok();
    return core::Status::Corruption(
        std::string("restoring a snapshot: ") + what + " returned " + core::HexU64(*r) +
        (expected ? " in the materializing process, " + core::HexU64(*expected) + " in the log"
                  : ""));
  }

 private:
  Tracee& proxy_;
  std::uint64_t at_;
};

// The log's calls before the snapshot that shape the address space, again.
core::Status ReplayMappingCalls(Injector& inject, const NativeLog& log, std::uint64_t count) {
  for (std::uint64_t i = 0; i < count; ++i) {
    const LoggedSyscall& call = log.syscalls[i];
    const std::uint64_t nr = call.entry.orig_rax, result = call.exit.rax;
    const bool shapes = nr == SYS_mmap || nr == SYS_munmap || nr == SYS_mprotect || nr == SYS_brk ||
                        nr == SYS_mremap || nr == SYS_shmat || nr == SYS_shmdt;
    if (!shapes || (nr != SYS_brk && result > ~std::uint64_t{4095})) continue;
    user_regs_struct e = call.entry;
    const std::uint64_t run = ProxyCall(call, &e);
    const std::uint64_t args[6] = {e.rdi, e.rsi, e.rdx, e.r10, e.r8, e.r9};
    const std::string what = "system call #" + std::to_string(i) + " (" + std::to_string(nr) + ")";
    if (core::Status s = inject.Require(run, args, what.c_str(), result); !s.ok()) return s;
  }
  return core::Status::Ok();
}

// Grows the proxy's stack down to `low` as the kernel grows it: one store
// there, stepped at `at`.
core::Status GrowStack(Tracee& proxy, std::uint64_t at, std::uint64_t low) {
  static const std::uint8_t kStore[3] = {0xc6, 0x00, 0x00};  // mov byte [rax], 0
  user_regs_struct saved{};
  if (core::Status s = proxy.GetRegs(&saved); !s.ok()) return s;
  if (core::Status s = proxy.WriteMemory(at, kStore); !s.ok()) return s;
  user_regs_struct r = saved;
  r.rip = at;
  r.rax = low;
  if (core::Status s = proxy.SetRegs(r); !s.ok()) return s;
  core::Expected<Stop> stop = proxy.Step();
  if (!stop.ok()) return stop.status();
  if (stop->kind != Stop::kStepped)
    return core::Status::Corruption("restoring a snapshot: the stack cannot grow to " +
                                    core::HexU64(low));
  return proxy.SetRegs(saved);
}

core::Status SetSignals(Tracee& proxy, Injector& inject, std::uint64_t scratch, const Snapshot& s) {
  for (const auto& [sig, action] : s.signals.actions) {
    if (core::Status st = proxy.WriteMemory(scratch, action); !st.ok()) return st;
    const std::uint64_t args[] = {static_cast<std::uint64_t>(sig), scratch, 0, 8};
    if (core::Status st = inject.Require(SYS_rt_sigaction, args, "rt_sigaction"); !st.ok())
      return st;
  }
  if (!s.signals.altstack.empty()) {
    if (core::Status st = proxy.WriteMemory(scratch, s.signals.altstack); !st.ok()) return st;
    const std::uint64_t args[] = {scratch, 0};
    if (core::Status st = inject.Require(SYS_sigaltstack, args, "sigaltstack"); !st.ok()) return st;
  }
  const std::uint8_t* mask = reinterpret_cast<const std::uint8_t*>(&s.sigmask);
  if (core::Status st = proxy.WriteMemory(scratch, {mask, 8}); !st.ok()) return st;
  const std::uint64_t args[] = {SIG_SETMASK, scratch, 0, 8};
  return inject.Require(SYS_rt_sigprocmask, args, "rt_sigprocmask");
}

}  // namespace

void MmapArgumentsWithoutFile(std::uint64_t result, user_regs_struct* entry) {
  const bool file = !(entry->r10 & MAP_ANONYMOUS);
  std::uint64_t flags = entry->r10;
  if (file)
    flags =
        (flags & ~std::uint64_t{MAP_SHARED | MAP_SHARED_VALIDATE}) | MAP_PRIVATE | MAP_ANONYMOUS;
  if (!(flags & MAP_FIXED)) flags |= MAP_FIXED_NOREPLACE;
  entry->rdi = result;
  entry->r10 = flags;
  if (file) entry->r8 = ~std::uint64_t{0}, entry->r9 = 0;
}

std::uint64_t ProxyCall(const LoggedSyscall& call, user_regs_struct* regs) {
  const user_regs_struct& e = call.entry;
  const std::uint64_t nr = e.orig_rax, result = call.exit.rax;
  if (nr == SYS_mmap) {
    MmapArgumentsWithoutFile(result, regs);
    return nr;
  }
  if ((nr != SYS_shmat && nr != SYS_shmdt) || !call.mapped) return nr;
  regs->rdi = nr == SYS_shmat ? result : e.rdi;
  regs->rsi = call.mapped->size;
  if (nr == SYS_shmdt) return SYS_munmap;
  regs->rdx =
      PROT_READ | (e.rdx & SHM_RDONLY ? 0 : PROT_WRITE) | (e.rdx & SHM_EXEC ? PROT_EXEC : 0);
  regs->r10 = MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED;
  regs->r8 = ~std::uint64_t{0};
  regs->r9 = 0;
  return SYS_mmap;
}

core::Expected<Snapshot> TakeSnapshot(const Tracee& tracee, const SignalSetup& signals) {
  Snapshot s;
  if (core::Status st = tracee.GetRegs(&s.regs); !st.ok()) return st;
  s.regs.orig_rax = ~std::uint64_t{0};  // no system call to restart
  if (core::Status st = tracee.GetXState(&s.xstate); !st.ok()) return st;
  s.sigmask = BlockedSignals(tracee.pid());
  s.signals = signals;
  core::Expected<std::vector<Mapping>> maps = tracee.ReadMaps();
  if (!maps.ok()) return maps.status();
  std::vector<std::uint8_t> contents;
  for (const Mapping& m : *maps) {
    if (KernelMapping(m.name)) continue;
    s.mappings.push_back({m.start, m.size, Prot(m)});
    if (!m.read) continue;
    contents.assign(m.size, 0);
    tracee.ReadMemoryZeroFill(m.start, contents);
    ForEachNonZeroRun(contents, [&](std::size_t offset, std::size_t length) {
      s.memory.push_back(
          {m.start + offset, {contents.begin() + offset, contents.begin() + offset + length}});
    });
  }
  return s;
}

core::Status RestoreSnapshot(Tracee& proxy, const NativeLog& log, const Snapshot& s) {
  if (s.syscall > log.syscalls.size())
    return core::Status::Corruption("snapshot after system call #" + std::to_string(s.syscall) +
                                    " of a log of " + std::to_string(log.syscalls.size()));
  user_regs_struct start{};
  if (core::Status st = proxy.GetRegs(&start); !st.ok()) return st;
  // The program's first instruction serves as the place to run things; the
  // snapshot's contents overwrite it.
  static const std::uint8_t kSyscall[2] = {0x0f, 0x05};
  if (core::Status st = proxy.WriteMemory(start.rip, kSyscall); !st.ok()) return st;
  Injector inject(proxy, start.rip);
  if (core::Status st = ReplayMappingCalls(inject, log, s.syscall); !st.ok()) return st;
  core::Expected<std::vector<Mapping>> maps = proxy.ReadMaps();
  if (!maps.ok()) return maps.status();
  for (const Mapping& m : *maps) {
    if (m.name != "[stack]") continue;
    for (const SnapshotMapping& want : s.mappings) {
      if (want.start < m.start && want.start + want.size == m.end()) {
        if (core::Status st = GrowStack(proxy, start.rip, want.start); !st.ok()) return st;
        if (core::Status st = proxy.WriteMemory(start.rip, kSyscall); !st.ok()) return st;
      }
    }
  }
  // Scratch memory for the signal calls' structures: below the initial
  // stack pointer (the stack's contents are written after).
  const std::uint64_t scratch = (start.rsp - 512) & ~std::uint64_t{15};
  if (core::Status st = SetSignals(proxy, inject, scratch, s); !st.ok()) return st;
  core::Expected<std::vector<SnapshotMapping>> now = MappingsOf(proxy);
  if (!now.ok()) return now.status();
  const std::vector<SnapshotMapping> have = Coalesced(*now), want = Coalesced(s.mappings);
  for (std::size_t i = 0; i < std::max(have.size(), want.size()); ++i) {
    if (i < have.size() && i < want.size() && have[i].start == want[i].start &&
        have[i].size == want[i].size && have[i].prot == want[i].prot)
      continue;
    const SnapshotMapping& m = i < want.size() ? want[i] : have[i];
    return core::Status::Corruption(
        "restoring a snapshot: after the log's mapping calls, the materializing process's "
        "mappings differ from the snapshot's at " +
        core::HexU64(m.start) + " (" + std::to_string(have.size()) + " ranges, " +
        std::to_string(want.size()) + " in the snapshot)");
  }
  // Every readable mapping's contents: zeros, then the runs.
  std::vector<std::uint8_t> contents;
  auto run = s.memory.begin();
  for (const SnapshotMapping& m : s.mappings) {
    if (!(m.prot & PROT_READ)) continue;
    contents.assign(m.size, 0);
    while (run != s.memory.end() && run->address < m.start) ++run;
    for (; run != s.memory.end() && run->address + run->bytes.size() <= m.start + m.size; ++run)
      std::memcpy(&contents[run->address - m.start], run->bytes.data(), run->bytes.size());
    if (core::Status st = proxy.WriteMemory(m.start, contents); !st.ok()) return st;
  }
  if (core::Status st = proxy.SetRegs(s.regs); !st.ok()) return st;
  std::vector<std::uint8_t> xstate = s.xstate;
  iovec iov{xstate.data(), xstate.size()};
  if (ptrace(PTRACE_SETREGSET, proxy.pid(), reinterpret_cast<void*>(NT_X86_XSTATE), &iov) != 0)
    return core::Status::IOError(std::string("restoring a snapshot: PTRACE_SETREGSET: ") +
                                 std::strerror(errno));
  return core::Status::Ok();
}

}  // namespace backstep::record
