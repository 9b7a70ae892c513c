#include "recorder/syscall_effects.h"

#include <sys/syscall.h>

namespace backstep::record {
namespace {

bool Failed(std::uint64_t result) { return result > ~std::uint64_t{4095}; }

void Add(std::vector<Range>* out, std::uint64_t address, std::uint64_t size) {
  if (address != 0 && size != 0) out->push_back({address, size});
}

constexpr std::uint64_t kStatSize = 144, kStatxSize = 256, kTimespec = 16, kUtsname = 390,
                        kRlimit = 16, kSysinfo = 112, kTermios = 36, kWinsize = 8;

}  // namespace

bool ChangesMappings(std::uint64_t nr) {
  switch (nr) {
    case SYS_mmap:
    case SYS_munmap:
    case SYS_mprotect:
    case SYS_brk:
    case SYS_mremap:
    case SYS_shmat:
    case SYS_shmdt:
    case SYS_pkey_mprotect:
    case SYS_remap_file_pages:
      return true;
    default:
      return false;
  }
}

bool KnownOutputs(std::uint64_t nr, const std::uint64_t a[6], std::uint64_t r,
                  std::vector<Range>* out) {
  const bool ok = !Failed(r);
  switch (nr) {
    // No memory written.
    case SYS_write:
    case SYS_writev:
    case SYS_pwrite64:
    case SYS_close:
    case SYS_lseek:
    case SYS_open:
    case SYS_openat:
    case SYS_access:
    case SYS_faccessat:
    case SYS_faccessat2:
    case SYS_getpid:
    case SYS_gettid:
    case SYS_getppid:
    case SYS_getuid:
    case SYS_geteuid:
    case SYS_getgid:
    case SYS_getegid:
    case SYS_set_tid_address:
    case SYS_set_robust_list:
    case SYS_exit:
    case SYS_exit_group:
    case SYS_mmap:
    case SYS_munmap:
    case SYS_mprotect:
    case SYS_brk:
    case SYS_mremap:
    case SYS_dup:
    case SYS_dup2:
    case SYS_dup3:
    case SYS_fsync:
    case SYS_unlink:
    case SYS_unlinkat:
    case SYS_mkdir:
    case SYS_chdir:
    case SYS_sched_yield:
    case SYS_futex:
    case SYS_rseq:
      return true;
    case SYS_read:
    case SYS_pread64:
    case SYS_getrandom:
      if (ok) Add(out, a[1 - (nr == SYS_getrandom)], r);
      return true;
    case SYS_getdents64:
    case SYS_getcwd:
      if (ok) Add(out, a[nr == SYS_getcwd ? 0 : 1], r);
      return true;
    case SYS_readlink:
      if (ok) Add(out, a[1], r);
      return true;
    case SYS_readlinkat:
      if (ok) Add(out, a[2], r);
      return true;
    case SYS_fstat:
    case SYS_stat:
    case SYS_lstat:
      Add(out, a[1], kStatSize);
      return true;
    case SYS_newfstatat:
      Add(out, a[2], kStatSize);
      return true;
    case SYS_statx:
      Add(out, a[4], kStatxSize);
      return true;
    case SYS_clock_gettime:
    case SYS_clock_getres:
      Add(out, a[1], kTimespec);
      return true;
    case SYS_gettimeofday:
      Add(out, a[0], kTimespec);
      Add(out, a[1], 8);
      return true;
    case SYS_time:
      Add(out, a[0], 8);
      return true;
    case SYS_nanosleep:
      Add(out, a[1], kTimespec);
      return true;
    case SYS_clock_nanosleep:
      Add(out, a[3], kTimespec);
      return true;
    case SYS_uname:
      Add(out, a[0], kUtsname);
      return true;
    case SYS_getrlimit:
      Add(out, a[1], kRlimit);
      return true;
    case SYS_prlimit64:
      Add(out, a[3], kRlimit);
      return true;
    case SYS_sysinfo:
      Add(out, a[0], kSysinfo);
      return true;
    case SYS_rt_sigaction:
      Add(out, a[2], 24 + a[3]);  // handler, flags, restorer, mask
      return true;
    case SYS_rt_sigprocmask:
      Add(out, a[2], a[3]);
      return true;
    case SYS_pipe:
    case SYS_pipe2:
      Add(out, a[0], 8);
      return true;
    case SYS_sched_getaffinity:
      if (ok) Add(out, a[2], r);
      return true;
    case SYS_arch_prctl:
      if (a[0] == 0x1003 || a[0] == 0x1004) Add(out, a[1], 8);  // ARCH_GET_FS/GS
      return true;
    case SYS_ioctl:
      if (a[1] == 0x5401) return Add(out, a[2], kTermios), true;  // TCGETS
      if (a[1] == 0x5413) return Add(out, a[2], kWinsize), true;  // TIOCGWINSZ
      return false;
    default:
      return false;
  }
}

}  // namespace backstep::record
