#include "recorder/native/syscall_buffer.h"

#include <dirent.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/uio.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <optional>
#include <string>

#include "backstep/core/hex.h"
#include "recorder/native/syscall_slot.h"
#include "recorder/native/syscall_stub.h"

namespace backstep::record {
namespace {

constexpr std::uint64_t kPage = 4096;
constexpr std::uint64_t kMaxOutput = stub::kCapacity - 2 * stub::kRecordHeader;
// Room kept between the regions and what is around them.
constexpr std::uint64_t kMargin = 16 << 20;
constexpr std::int64_t kRel32Reach = (std::int64_t{1} << 31) - 4096;

void Put64(std::uint8_t* at, std::uint64_t v) { std::memcpy(at, &v, 8); }

bool FitsRel32(std::uint64_t from, std::uint64_t to) {
  const std::int64_t d = static_cast<std::int64_t>(to - from);
  return d > -kRel32Reach && d < kRel32Reach;
}

// A system call in `tracee` made by the `syscall` at `at`.
core::Expected<std::uint64_t> Call(Tracee& tracee, std::uint64_t at, std::uint64_t nr,
                                   std::initializer_list<std::uint64_t> args) {
  const std::vector<std::uint64_t> a(args);
  return tracee.InjectSyscall(tracee.pid(), at, nr, a);
}

bool Failed(std::uint64_t r) { return r > ~std::uint64_t{4095}; }

}  // namespace

core::Expected<std::optional<SyscallBuffer>> SyscallBuffer::Install(Tracee& tracee, bool clocks) {
  user_regs_struct regs{};
  if (core::Status s = tracee.GetRegs(&regs); !s.ok()) return s;
  core::Expected<std::vector<Mapping>> maps = tracee.ReadMaps();
  if (!maps.ok()) return maps.status();
  const Mapping* stack = nullptr;
  std::uint64_t highest = 0;  // the end of the highest mapping below the stack
  for (const Mapping& m : *maps) {
    if (m.name == "[stack]") stack = &m;
  }
  if (!stack || maps->empty()) return std::optional<SyscallBuffer>();
  for (const Mapping& m : *maps) {
    if (m.start < stack->start) highest = std::max<std::uint64_t>(highest, m.end());
  }
  // Below the stack's growth (its limit), above every mapping: the kernel
  // places no mapping there by itself.
  rlimit limit{};
  std::uint64_t growth = 8 << 20;
  if (prlimit(tracee.pid(), RLIMIT_STACK, nullptr, &limit) == 0 && limit.rlim_cur != RLIM_INFINITY)
    growth = std::max<std::uint64_t>(growth, limit.rlim_cur);
  if (stack->start < growth + kMargin + stub::kCoreSize) return std::optional<SyscallBuffer>();
  const std::uint64_t core = (stack->start - growth - kMargin - stub::kCoreSize) & ~(kPage - 1);
  if (core < highest + kMargin) return std::optional<SyscallBuffer>();

  // The calls are made by a `syscall` written over the program's first
  // instruction (restored after).
  std::uint8_t saved_code[2] = {};
  if (tracee.ReadMemory(regs.rip, saved_code) != 2)
    return core::Status::IOError("cannot read the program's first instruction");
  static const std::uint8_t kSyscall[2] = {0x0f, 0x05};
  if (core::Status s = tracee.WriteMemory(regs.rip, kSyscall); !s.ok()) return s;
  core::Expected<std::optional<SyscallBuffer>> made =
      MapRegions(tracee, regs.rip, core, maps->front(), *maps);
  if (core::Status s = tracee.WriteMemory(regs.rip, saved_code); !s.ok()) return s;
  if (!made.ok() || !*made) return made;
  SyscallBuffer& b = **made;
  b.clocks_ = clocks;
  if (core::Status s = tracee.WriteMemory(core, stub::HandlerCode()); !s.ok()) return s;
  std::uint8_t data[80] = {};
  Put64(data + stub::kDataClocks, clocks ? 1 : 0);
  Put64(data + stub::kDataCapacity, stub::kCapacity);
  Put64(data + stub::kDataMaxOutput, kMaxOutput);
  if (core::Status s = tracee.WriteMemory(stub::DataAddress(core, 0), data); !s.ok()) return s;
  // The descriptors the program starts with.
  const std::string dir = "/proc/" + std::to_string(tracee.pid()) + "/fd";
  if (DIR* d = opendir(dir.c_str())) {
    while (const dirent* e = readdir(d)) {
      char* end = nullptr;
      const std::uint64_t fd = std::strtoull(e->d_name, &end, 10);
      if (*e->d_name && !*end && fd < stub::kSafeFdCount)
        b.safe_fds_[fd] = b.SafeDescriptor(tracee.pid(), fd);
    }
    closedir(d);
  }
  if (core::Status s = b.WriteSafeFds(tracee); !s.ok()) return s;
  return made;
}

core::Expected<std::optional<SyscallBuffer>> SyscallBuffer::MapRegions(
    Tracee& tracee, std::uint64_t syscall_at, std::uint64_t core, const Mapping& exe,
    const std::vector<Mapping>& maps) {
  auto map = [&](std::uint64_t at, std::uint64_t size, std::uint64_t prot) {
    return Call(
        tracee, syscall_at, SYS_mmap,
        {at, size, prot, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, ~std::uint64_t{0}, 0});
  };
  core::Expected<std::uint64_t> mapped = map(core, stub::kCoreSize, PROT_READ | PROT_WRITE);
  if (!mapped.ok()) return mapped.status();
  if (*mapped != core) {
    if (!Failed(*mapped)) (void)Call(tracee, syscall_at, SYS_munmap, {*mapped, stub::kCoreSize});
    return std::optional<SyscallBuffer>();
  }
  SyscallBuffer b;
  b.core_ = core;
  b.regions_.push_back({core, stub::kCoreSize, core + stub::kCoreSlots, 0});
  for (const auto& [start, size] :
       {std::pair{core, kPage}, std::pair{core + stub::kCoreSlots, stub::kSlotArea}}) {
    core::Expected<std::uint64_t> r =
        Call(tracee, syscall_at, SYS_mprotect, {start, size, PROT_READ | PROT_EXEC});
    if (!r.ok()) return r.status();
    if (*r != 0) return core::Status::IOError("mprotect of the system call buffer's code failed");
  }
  // Slots for the executable's sites, just below it.
  if (exe.start > stub::kSlotArea + (2 << 20) + 0x10000) {
    const std::uint64_t near = (exe.start - (2 << 20)) & ~(kPage - 1);
    bool free = true;
    for (const Mapping& m : maps)
      free = free && (m.end() <= near || m.start >= near + stub::kSlotArea);
    if (free) {
      core::Expected<std::uint64_t> r = map(near, stub::kSlotArea, PROT_READ | PROT_EXEC);
      if (!r.ok()) return r.status();
      if (*r == near) {
        b.regions_.push_back({near, stub::kSlotArea, near, 0});
      } else if (!Failed(*r)) {  // a kernel that took the address as a hint
        (void)Call(tracee, syscall_at, SYS_munmap, {*r, stub::kSlotArea});
      }
    }
  }
  return std::optional<SyscallBuffer>(std::move(b));
}

std::optional<std::uint64_t> SyscallBuffer::TracedSiteAt(std::uint64_t rip) const {
  const auto it = by_slot_.find(rip - stub::kSlotContinue);
  if (it == by_slot_.end()) return std::nullopt;
  return it->second;
}

void SyscallBuffer::LogAsSite(std::uint64_t site, user_regs_struct* regs) {
  regs->rip = site + 2;
  regs->rcx = site + 2;
}

core::Status SyscallBuffer::Drain(const Tracee& tracee, const user_regs_struct& like,
                                  std::vector<LoggedSyscall>* out, std::uint64_t* drained) {
  std::uint64_t header[2] = {};  // used, count
  if (tracee.ReadMemory(stub::DataAddress(core_, stub::kDataUsed),
                        {reinterpret_cast<std::uint8_t*>(header), sizeof header}) != sizeof header)
    return core::Status::IOError("cannot read the system call buffer's header");
  const auto [used, count] = std::pair{header[0], header[1]};
  if (used == 0) return core::Status::Ok();
  auto corrupt = [&](const std::string& why, std::uint64_t offset) {
    return core::Status::Corruption("the program's system call buffer at " +
                                    core::HexU64(core_ + stub::kBuffer) + " is damaged: " + why +
                                    " at offset " + std::to_string(offset) +
                                    " (record with --no-syscall-buffer)");
  };
  if (used > stub::kCapacity || used % 8) return corrupt("its length " + std::to_string(used), 0);
  records_.resize(used);
  if (tracee.ReadMemory(core_ + stub::kBuffer, records_) != used)
    return core::Status::IOError("cannot read the system call buffer");
  const std::uint64_t zero[2] = {};
  if (core::Status s = tracee.WriteMemory(stub::DataAddress(core_, stub::kDataUsed),
                                          {reinterpret_cast<const std::uint8_t*>(zero), 16});
      !s.ok())
    return s;
  if (count > used / stub::kRecordHeader)
    return corrupt("a count of " + std::to_string(count) + " records", 0);
  if (out->capacity() < out->size() + count)
    out->reserve(std::max(2 * out->capacity(), out->size() + count));
  std::uint64_t n = 0;
  for (std::uint64_t at = 0; at < used; ++n) {
    std::uint64_t f[22];
    if (used - at < stub::kRecordHeader) return corrupt("a truncated record", at);
    std::memcpy(f, &records_[at], sizeof f);
    const std::uint64_t size = f[0], slot = f[1], flags = f[17], rsp = f[18], result = f[19],
                        address = f[20], length = f[21];
    const auto site = by_slot_.find(slot);
    if (size < stub::kRecordHeader || size % 8 || size > used - at ||
        length > size - stub::kRecordHeader || site == by_slot_.end())
      return corrupt("a record that does not fit", at);
    LoggedSyscall& call = out->emplace_back();
    call.entry = like;
    std::memcpy(&call.entry, &f[2], 15 * 8);  // r15 ... rdi
    call.entry.orig_rax = call.entry.rax;
    call.entry.rax = static_cast<std::uint64_t>(-ENOSYS);
    call.entry.r11 = flags;
    call.entry.eflags = flags;
    call.entry.rsp = rsp;
    LogAsSite(site->second, &call.entry);
    call.exit = call.entry;
    call.exit.rax = result;
    if (length) {
      const std::uint8_t* bytes = &records_[at + stub::kRecordHeader];
      call.writes.push_back({address, {bytes, bytes + length}});
    }
    at += size;
  }
  if (n != count) return corrupt(std::to_string(n) + " records, not " + std::to_string(count), 0);
  *drained += n;
  return core::Status::Ok();
}

bool SyscallBuffer::SafeDescriptor(pid_t pid, std::uint64_t fd) const {
  struct stat st {};
  if (!StatDescriptor(pid, fd, &st)) return false;
  if (S_ISREG(st.st_mode)) return true;
  return S_ISCHR(st.st_mode) && (st.st_rdev == makedev(1, 3) || st.st_rdev == makedev(1, 5));
}

core::Status SyscallBuffer::WriteSafeFds(Tracee& tracee) {
  std::array<std::uint8_t, stub::kSafeFdCount / 8> bits{};
  for (std::size_t fd = 0; fd < stub::kSafeFdCount; ++fd)
    if (safe_fds_[fd]) bits[fd / 8] |= static_cast<std::uint8_t>(1u << (fd % 8));
  return tracee.WriteMemory(stub::DataAddress(core_, stub::kDataSafeFds), bits);
}

core::Status SyscallBuffer::SetDescriptor(Tracee& tracee, std::uint64_t fd, bool safe) {
  if (fd >= stub::kSafeFdCount || safe_fds_[fd] == safe) return core::Status::Ok();
  safe_fds_[fd] = safe;
  std::uint8_t byte = 0;
  for (std::size_t i = 0; i < 8; ++i)
    if (safe_fds_[fd / 8 * 8 + i]) byte |= static_cast<std::uint8_t>(1u << i);
  return tracee.WriteMemory(stub::DataAddress(core_, stub::kDataSafeFds + fd / 8), {&byte, 1});
}

core::Status SyscallBuffer::TrackDescriptors(Tracee& tracee, std::uint64_t nr,
                                             const user_regs_struct& e, std::uint64_t result) {
  if (Failed(result)) return core::Status::Ok();
  switch (nr) {
    case SYS_open:
    case SYS_creat:
    case SYS_openat:
    case SYS_openat2:
    case SYS_dup:
    case SYS_dup2:
    case SYS_dup3:
      return SetDescriptor(tracee, result, SafeDescriptor(tracee.pid(), result));
    case SYS_fcntl:
      if (e.rsi != 0 /*F_DUPFD*/ && e.rsi != 1030 /*F_DUPFD_CLOEXEC*/) return core::Status::Ok();
      return SetDescriptor(tracee, result, SafeDescriptor(tracee.pid(), result));
    case SYS_close:
      return SetDescriptor(tracee, e.rdi & 0xffffffff, false);
    case SYS_close_range:
      if (e.rdx & 4 /*CLOSE_RANGE_CLOEXEC*/) return core::Status::Ok();
      for (std::uint64_t fd = e.rdi & 0xffffffff;
           fd <= (e.rsi & 0xffffffff) && fd < stub::kSafeFdCount; ++fd) {
        if (core::Status s = SetDescriptor(tracee, fd, false); !s.ok()) return s;
      }
      return core::Status::Ok();
    default:
      return core::Status::Ok();
  }
}

bool SyscallBuffer::Bufferable(const user_regs_struct& e) const {
  switch (e.orig_rax) {
    case SYS_read:
    case SYS_pread64:
      if (e.rdx > kMaxOutput) return false;
      [[fallthrough]];
    case SYS_write:
    case SYS_pwrite64:
    case SYS_lseek:
      return e.rdi < stub::kSafeFdCount && safe_fds_[e.rdi];
    case SYS_getpid:
    case SYS_getppid:
    case SYS_gettid:
    case SYS_getuid:
    case SYS_getgid:
    case SYS_geteuid:
    case SYS_getegid:
      return true;
    case SYS_clock_gettime:  // the clocks that cannot fail (syscall_stub.cc)
      return clocks_ && (e.rdi <= 7 || e.rdi == 11) && e.rsi != 0;
    default:
      return false;
  }
}

core::Status SyscallBuffer::MaybePatch(Tracee& tracee, std::uint64_t site,
                                       const user_regs_struct& entry, user_regs_struct* exit,
                                       bool* moved) {
  *moved = false;
  if (exit->rip != site + 2 || sites_.count(site) || never_.count(site) || !Bufferable(entry))
    return core::Status::Ok();
  Site s;
  std::array<std::uint8_t, 16> bytes{};
  if (tracee.ReadMemory(site, bytes) != bytes.size() || bytes[0] != 0x0f || bytes[1] != 0x05) {
    never_.insert(site);
    return core::Status::Ok();
  }
  const std::optional<Relocation> after = RelocateAfterSyscall(bytes.data(), site);
  // Within one page (so one mapping).
  if (!after || site % kPage > kPage - after->length) {
    never_.insert(site);
    return core::Status::Ok();
  }
  s.original.assign(bytes.begin(), bytes.begin() + static_cast<std::ptrdiff_t>(after->length));
  Region* region = nullptr;
  for (Region& r : regions_) {
    const std::uint64_t slot = r.slots + r.used * stub::kSlotSize;
    if (r.used < stub::kSlotArea / stub::kSlotSize && FitsRel32(site + 5, slot) &&
        FitsRel32(slot + stub::kSlotSize, site + 16)) {
      region = &r;
      break;
    }
  }
  if (!region) {
    never_.insert(site);
    return core::Status::Ok();
  }
  s.slot = region->slots + region->used++ * stub::kSlotSize;
  if (core::Status st = tracee.WriteMemory(s.slot, BuildSlot(core_, s.slot, site, *after));
      !st.ok())
    return st;
  std::vector<std::uint8_t> jump(after->length, 0xcc);
  jump[0] = 0xe9;
  const std::uint64_t entry_at = s.slot + stub::kSlotEntry;
  const auto rel = static_cast<std::uint32_t>(static_cast<std::int64_t>(entry_at - (site + 5)));
  std::memcpy(&jump[1], &rel, 4);
  if (core::Status st = tracee.WriteMemory(site, jump); !st.ok()) return st;
  sites_[site] = s;
  by_slot_[s.slot] = site;
  exit->rip = s.slot + stub::kSlotContinue;
  *moved = true;
  return core::Status::Ok();
}

core::Status SyscallBuffer::Unpatch(Tracee& tracee, std::uint64_t site) {
  never_.insert(site);
  const auto it = sites_.find(site);
  if (it == sites_.end()) return core::Status::Ok();
  if (core::Status s = tracee.WriteMemory(site, it->second.original); !s.ok()) return s;
  sites_.erase(it);  // by_slot_ keeps it: the slot is never reused
  return core::Status::Ok();
}

core::Status SyscallBuffer::TraceNext(Tracee& tracee, bool on, bool written) {
  if (on == trace_next_ && !written) return core::Status::Ok();
  trace_next_ = on;
  const std::uint64_t v = on ? 1 : 0;
  return tracee.WriteMemory(stub::DataAddress(core_, stub::kDataTraceNext),
                            {reinterpret_cast<const std::uint8_t*>(&v), 8});
}

std::uint64_t SyscallBuffer::trace_next_address() const {
  return stub::DataAddress(core_, stub::kDataTraceNext);
}

void SyscallBuffer::RequestStop(pid_t pid, std::uint64_t trace_next_address) {
  std::uint64_t one = 1;
  iovec local{&one, sizeof one};
  iovec remote{reinterpret_cast<void*>(trace_next_address), sizeof one};
  (void)process_vm_writev(pid, &local, 1, &remote, 1, 0);
}

std::vector<std::pair<std::uint64_t, std::uint64_t>> SyscallBuffer::regions() const {
  std::vector<std::pair<std::uint64_t, std::uint64_t>> out;
  for (const Region& r : regions_) out.push_back({r.start, r.size});
  return out;
}

bool SyscallBuffer::Overlaps(std::uint64_t start, std::uint64_t size) const {
  return std::any_of(regions_.begin(), regions_.end(), [&](const Region& r) {
    return start < r.start + r.size && r.start < start + size;
  });
}

void SyscallBuffer::Hide(Snapshot* s) const {
  auto outside = [&](std::uint64_t start, std::uint64_t size) { return !Overlaps(start, size); };
  std::erase_if(s->mappings, [&](const SnapshotMapping& m) { return !outside(m.start, m.size); });
  std::erase_if(s->memory,
                [&](const LoggedWrite& w) { return !outside(w.address, w.bytes.size()); });
  // Each patched site's original bytes, merged into the runs (sorted,
  // disjoint: RestoreSnapshot walks them with the mappings).
  for (const auto& [site, patch] : sites_) {
    auto first = std::lower_bound(
        s->memory.begin(), s->memory.end(), site,
        [](const LoggedWrite& w, std::uint64_t at) { return w.address + w.bytes.size() <= at; });
    auto last = first;
    const std::uint64_t patch_end = site + patch.original.size();
    std::uint64_t start = site, end = patch_end;
    for (; last != s->memory.end() && last->address < patch_end; ++last) {
      start = std::min<std::uint64_t>(start, last->address);
      end = std::max<std::uint64_t>(end, last->address + last->bytes.size());
    }
    LoggedWrite merged{start, std::vector<std::uint8_t>(end - start, 0)};
    for (auto w = first; w != last; ++w)
      std::copy(w->bytes.begin(), w->bytes.end(), merged.bytes.begin() + (w->address - start));
    std::copy(patch.original.begin(), patch.original.end(), merged.bytes.begin() + (site - start));
    s->memory.insert(s->memory.erase(first, last), std::move(merged));
  }
  if (const std::optional<std::uint64_t> site = TracedSiteAt(s->regs.rip)) {
    if (s->regs.rcx == s->regs.rip) s->regs.rcx = *site + 2;
    s->regs.rip = *site + 2;
  }
}

}  // namespace backstep::record
