// SyscallBuffer: the native engine's in-process system call buffering (rr's
// syscall buffer, made for this engine). A traced system call costs two
// ptrace stops (~10 us on a VM); a buffered one costs about what the call
// itself costs, because the program never stops for it.
//
// How: at exec the recorder maps a "core" region in the program (the
// handler, syscall_stub.h; its data; the buffer; trampoline slots) in the
// gap between the mappings and the stack, and a slot region just below the
// executable; the seccomp filter (seccomp_trap.h) lets the handler's one
// `syscall` through. When a traced call of a kind the handler buffers
// returns at a site whose next bytes can move (glibc's wrappers: `syscall`
// then `cmp $imm32,%rax`, `test %eax,%eax` and a short jcc, or `ret` and the
// padding between functions; RelocateAfterSyscall in the .cc), the recorder
// writes a trampoline slot within 2 GiB and patches the site into a jump
// there. From then on the site's calls enter the handler on its own stack
// (the program's stack, red zone included, is never written), which makes
// the call from the allowed address and appends a record; the slot then
// sets rcx, runs the moved instructions and jumps back. While the program
// runs, NativeSession's snapshot clock may set "trace next" (RequestStop).
//
// The recorder drains the buffer at every stop where it logs (Drain): each
// record becomes a LoggedSyscall exactly as a traced call of that site
// would have been logged, so the log, its materialization and the trace are
// the same as without the buffer. A call the handler does not buffer goes
// to the slot's own `syscall`, a traced stop the recorder logs as made at
// the site (TracedSiteAt, LogAsSite). A held signal sets "trace next", so
// the next call stops and the signal is delivered there (unpatching that
// site for good, since the signal frame returns to the site's original
// bytes).
//
// Snapshots never show the buffer (Hide): its regions are left out, the
// patched sites hold their original bytes and a rip in a slot becomes the
// site's. A program that unmaps or remaps the regions is refused
// (Overlaps).
//
// Thread-safety: one recorder thread; the program is single-threaded.
#pragma once

#include <sys/user.h>

#include <array>
#include <bitset>
#include <cstdint>
#include <optional>
#include <set>
#include <unordered_map>
#include <vector>

#include "backstep/core/expected.h"
#include "recorder/native/native_log.h"
#include "recorder/native/snapshot.h"
#include "recorder/tracee.h"

namespace backstep::record {

class SyscallBuffer {
 public:
  // Maps the regions in `tracee`, stopped at exec before the seccomp filter
  // is installed, and writes the handler. `clocks`: clock_gettime may be
  // buffered (no given clock answers). nullopt when there is no room for
  // the regions (the program then runs with every call traced).
  static core::Expected<std::optional<SyscallBuffer>> Install(Tracee& tracee, bool clocks);

  // What the seccomp filter lets through untraced.
  std::uint64_t allowed_ip() const { return core_ + kAllowedIpOffset; }
  // The handler's stop when the buffer is full: drain, then skip the call.
  bool IsFlushStop(std::uint64_t rip) const { return rip == core_ + kFlushIpOffset; }

  // The site whose slot's traced `syscall` stopped the program at `rip`.
  std::optional<std::uint64_t> TracedSiteAt(std::uint64_t rip) const;
  // A register set read at such a stop, as the site's own call shows it.
  static void LogAsSite(std::uint64_t site, user_regs_struct* regs);

  // Appends the buffered calls to `out` (oldest first) and empties the
  // buffer. `like`: a register set of the program's from its last stop
  // (segments and bases, which the handler does not record).
  core::Status Drain(const Tracee& tracee, const user_regs_struct& like,
                     std::vector<LoggedSyscall>* out, std::uint64_t* drained);

  // At the exit stop of traced call `nr` made at `site` (its `syscall`):
  // patches the site when the handler would have buffered this call and
  // its bytes allow it; `*exit` (the stop's registers) then moves to the
  // slot's continuation, and the caller writes them back when *moved.
  core::Status MaybePatch(Tracee& tracee, std::uint64_t site, const user_regs_struct& entry,
                          user_regs_struct* exit, bool* moved);
  // A signal is delivered on return to `site`'s original bytes: unpatched
  // for good.
  core::Status Unpatch(Tracee& tracee, std::uint64_t site);
  // Calls go to the recorder while `on` (a held signal, a snapshot due);
  // `written`: RequestStop may have set it behind this object's back.
  core::Status TraceNext(Tracee& tracee, bool on, bool written = false);
  // Sets "trace next" in running process `pid` (any thread; the program
  // need not be stopped): its next call stops.
  static void RequestStop(pid_t pid, std::uint64_t trace_next_address);
  std::uint64_t trace_next_address() const;
  // After traced call `nr` (`entry` its registers) returned `result`: the
  // descriptors the handler may use (regular files, /dev/null, /dev/zero).
  core::Status TrackDescriptors(Tracee& tracee, std::uint64_t nr, const user_regs_struct& entry,
                                std::uint64_t result);
  // [start, start + size) meets a region.
  bool Overlaps(std::uint64_t start, std::uint64_t size) const;
  // The regions (start, size).
  std::vector<std::pair<std::uint64_t, std::uint64_t>> regions() const;
  // The snapshot as if the buffer did not exist.
  void Hide(Snapshot* snapshot) const;

  std::uint64_t patched_sites() const { return by_slot_.size(); }
  // A site was ever patched: the buffer may hold calls.
  bool active() const { return !by_slot_.empty(); }

 private:
  static constexpr std::uint64_t kAllowedIpOffset = 2, kFlushIpOffset = 18;
  struct Region {
    std::uint64_t start = 0, size = 0;  // the mapping
    std::uint64_t slots = 0, used = 0;  // first slot; slots taken
  };
  struct Site {
    std::uint64_t slot = 0;
    std::vector<std::uint8_t> original;  // the bytes the patch covers
  };
  SyscallBuffer() = default;
  // The regions, by calls of the `syscall` at `syscall_at`: the core at
  // `core` and a slot region below the executable `exe` when there is room.
  static core::Expected<std::optional<SyscallBuffer>> MapRegions(Tracee& tracee,
                                                                 std::uint64_t syscall_at,
                                                                 std::uint64_t core,
                                                                 const Mapping& exe,
                                                                 const std::vector<Mapping>& maps);
  // The buffer's classification of descriptor `fd` now.
  bool SafeDescriptor(pid_t pid, std::uint64_t fd) const;
  core::Status SetDescriptor(Tracee& tracee, std::uint64_t fd, bool safe);
  core::Status WriteSafeFds(Tracee& tracee);
  // Whether the handler would buffer call `entry` (by its number and
  // descriptor, as the handler decides).
  bool Bufferable(const user_regs_struct& entry) const;

  std::uint64_t core_ = 0;
  std::vector<Region> regions_;
  bool clocks_ = false;
  bool trace_next_ = false;
  std::bitset<1024> safe_fds_;
  std::unordered_map<std::uint64_t, Site> sites_;             // by site
  std::unordered_map<std::uint64_t, std::uint64_t> by_slot_;  // slot -> site
  std::set<std::uint64_t> never_;                             // sites a signal returned to
  std::vector<std::uint8_t> records_;
};

}  // namespace backstep::record
