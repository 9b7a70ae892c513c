// NativeLog: what `backstep record --engine native` logs while the program
// runs natively (native_recorder.h), and all that materialization
// (materialize.h) needs besides the program itself to re-execute that run in
// the emulator: every system call's registers at entry, its result and the
// memory the kernel wrote; every rdtsc/rdtscp's value; the CPUID the program
// saw; AT_RANDOM's bytes; its environment; and, to refuse a materialization
// that would diverge, the working directory and the files mapped at exec.
//
// File format (little-endian, written atomically): "BSNLOG03", then the
// header fields and the records in the order of the struct below, strings
// and arrays prefixed by a u64 count (the snapshots: u64 system call, file
// name; a system call's `mapped`: a count of 0 or 1, then the path, the u64
// offset and the u64 size). ReadNativeLog() checks every count against the file's size:
// a damaged log is an error naming the offset. A file mmap's writes are
// the new mapping's contents; an mremap's that grew a file mapping, the
// grown pages' contents; a shmat's, the segment's. Older versions are
// refused by name as not logs of this version: "BSNLOG01" (before
// LoggedSyscall::mapped) and "BSNLOG02" (before LoggedFileMapping::size:
// no writes for a grown file mapping, whose new pages would be materialized
// as zeros, and no SysV shared memory segments).
//
// Thread-safety: plain data.
#pragma once

#include <sys/user.h>

#include <array>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "backstep/core/expected.h"
#include "recorder/signal_disposition.h"  // RestartsSyscall

namespace backstep::record {

struct LoggedWrite {
  std::uint64_t address = 0;
  std::vector<std::uint8_t> bytes;
};

// The file a successful mmap of a file mapped, as /proc/PID/maps named it
// at the returned address right after the call: its path, the file offset
// there and the bytes mapped (the length in pages). For a successful shmat,
// the SysV shared memory segment attached at the returned address ("/SYSV"
// and its key in hex, " (deleted)"), offset 0, its size there; for a
// successful shmdt, the attachment it detached at its argument, as
// /proc/PID/maps showed it before the call. Materialization maps (and
// unmaps) anonymous memory instead and gives the trace these
// (mapping_names.h).
struct LoggedFileMapping {
  std::string path;
  std::uint64_t offset = 0;
  std::uint64_t size = 0;
  bool operator==(const LoggedFileMapping&) const = default;
};

struct LoggedSyscall {
  user_regs_struct entry{};           // at the seccomp stop: orig_rax is the number
  user_regs_struct exit{};            // after it (rax: the result)
  std::vector<LoggedWrite> writes;    // what the kernel wrote (new file pages: their contents)
  int signal_after = 0;               // a held signal delivered when it returned (0: none)
  std::vector<std::uint8_t> siginfo;  // signal_after's siginfo_t (128 bytes) as delivered
  // A file mmap's file (none for one /proc/PID/maps shows as anonymous
  // memory: a private mapping of /dev/zero), a shmat's or shmdt's segment;
  // none for other calls.
  std::optional<LoggedFileMapping> mapped;
};

// A file mapped at exec (the executable, ld.so): materialization maps it
// again, so it must not have changed.
struct LoggedFile {
  std::string path;
  std::uint64_t device = 0, inode = 0, size = 0, mtime_ns = 0;
};

// A snapshot of the process taken in the record phase right after system
// call `syscall - 1` returned (snapshot.h): the interval from it on is
// materialized independently. `file`: a name in the log's directory.
struct SnapshotRef {
  std::uint64_t syscall = 0;
  std::string file;
};

struct NativeLog {
  std::vector<std::string> argv;
  std::string cwd;
  std::vector<std::string> environment;  // what the program got (materialization gives it again)
  std::array<std::uint8_t, 16> at_random{};
  // kPortable: CPUID faulted and PortableCpuid() answered; kHost: the CPU
  // answered (no CPUID faulting), on CPU `cpu` of a machine whose CPUID
  // leaves 0, 1 and 7 are `cpu_signature`.
  enum class Cpuid : std::uint8_t { kPortable = 0, kHost = 1 } cpuid = Cpuid::kPortable;
  std::int32_t cpu = -1;
  std::array<std::uint32_t, 12> cpu_signature{};
  std::vector<LoggedFile> files;
  std::vector<LoggedSyscall> syscalls;
  std::vector<std::uint64_t> rdtsc;  // edx:eax of each rdtsc/rdtscp, in order
  enum class End : std::uint8_t { kExited = 0, kKilled = 1 } end = End::kExited;
  std::int32_t status = 0;             // exit code or signal
  std::vector<SnapshotRef> snapshots;  // in order of `syscall`
  std::string directory;               // the log's (set by ReadNativeLog; not written)
};

core::Status WriteNativeLog(const NativeLog& log, const std::string& path);
core::Expected<NativeLog> ReadNativeLog(const std::string& path);
// The log in `data`, a file at `path` (its name in errors, its directory the
// log's): what ReadNativeLog does after reading the file (fuzzed:
// fuzz/native_log_fuzzer.cc).
core::Expected<NativeLog> ParseNativeLog(std::span<const std::uint8_t> data,
                                         const std::string& path);

// The process environment's strings (what a program spawned now gets).
std::vector<std::string> CurrentEnvironment();
// CPUID leaves 0, 1 and 7 (eax..edx) of the CPU running the caller.
std::array<std::uint32_t, 12> CpuSignature();

}  // namespace backstep::record
