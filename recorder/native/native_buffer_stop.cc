// NativeSession's side of the system call buffer (syscall_buffer.h): its
// calls into the log, its flush stop, "trace next", and the mapping calls
// that would remove it.
#include <sys/mman.h>
#include <sys/syscall.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <mutex>

#include "backstep/core/hex.h"
#include "recorder/native/native_session.h"

namespace backstep::record {

core::Status NativeSession::DrainBuffer() {
  if (!buffer_ || !buffer_->active()) return core::Status::Ok();
  std::uint64_t drained = 0;
  if (core::Status s = buffer_->Drain(tracee_, like_, &log_.syscalls, &drained); !s.ok()) return s;
  result_.syscalls += drained;
  result_.buffered += drained;
  return core::Status::Ok();
}

core::Status NativeSession::OnFlush(const user_regs_struct& regs) {
  if (core::Status s = DrainBuffer(); !s.ok()) return s;
  // The handler's getpid is not the program's: skipped, not logged.
  user_regs_struct skip = regs;
  skip.orig_rax = ~std::uint64_t{0};
  skip.rax = 0;
  if (core::Status s = tracee_.SetRegs(skip); !s.ok()) return s;
  // A snapshot is taken at a traced call's return: the next call stops.
  if (SnapshotDue()) snapshot_wanted_ = true;
  return UpdateTraceNext();
}

core::Status NativeSession::UpdateTraceNext() {
  if (!buffer_) return core::Status::Ok();
  return buffer_->TraceNext(tracee_, !held_.empty() || requeued_ || snapshot_wanted_ || buffer_off_,
                            clock_stopped_.exchange(false));
}

void NativeSession::SnapshotClock(std::stop_token stop) {
  const std::uint64_t due_ns = options_.snapshot_ms * 1000000;
  const auto period = std::chrono::microseconds(std::max<std::uint64_t>(500, due_ns / 4000));
  std::mutex mutex;
  std::condition_variable_any wake;
  std::unique_lock lock(mutex);
  while (true) {
    wake.wait_for(lock, stop, period, [] { return false; });
    if (stop.stop_requested()) return;
    if (ProgramCpuNs() - last_snapshot_ns_.load() < due_ns) continue;
    // The write first: the recorder, seeing the flag, writes what it wants.
    SyscallBuffer::RequestStop(pid_, buffer_->trace_next_address());
    clock_stopped_ = true;
  }
}

core::Status NativeSession::RefuseBufferOverlap(const user_regs_struct& e) {
  if (!buffer_) return core::Status::Ok();
  const std::uint64_t nr = e.orig_rax;
  bool overlaps = false;
  if (nr == SYS_munmap || nr == SYS_mprotect || nr == SYS_madvise) {
    overlaps = buffer_->Overlaps(e.rdi, e.rsi);
  } else if (nr == SYS_mmap) {
    overlaps = (e.r10 & MAP_FIXED) && buffer_->Overlaps(e.rdi, e.rsi);
  } else if (nr == SYS_mremap) {
    overlaps = buffer_->Overlaps(e.rdi, e.rsi) ||
               ((e.r10 & MREMAP_FIXED) && buffer_->Overlaps(e.r8, e.rdx));
  }
  if (!overlaps) return core::Status::Ok();
  return core::Status::Unsupported(
      "the program's system call " + std::to_string(nr) + " at " + core::HexU64(e.rip - 2) +
      " would change the range " + core::HexU64(e.rdi) +
      " where the recorder keeps its system call buffer: record it with --no-syscall-buffer");
}

}  // namespace backstep::record
