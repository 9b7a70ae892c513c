#include "recorder/native/native_log.h"

#include <cpuid.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>

#include "recorder/native/native_io.h"

extern char** environ;

namespace backstep::record {
namespace {

constexpr char kMagic[8] = {'B', 'S', 'N', 'L', 'O', 'G', '0', '3'};

// Older versions' magics, refused by name, and what their logs lack.
struct OlderVersion {
  const char* magic;
  const char* lacks;
};
constexpr OlderVersion kOlderVersions[] = {
    {"BSNLOG01", "without the files mmap mapped"},
    {"BSNLOG02", "without the contents of the file pages mremap grew and the SysV shared memory"},
};

}  // namespace

core::Status WriteNativeLog(const NativeLog& log, const std::string& path) {
  Writer w;
  w.Raw(kMagic, sizeof kMagic);
  w.U64(log.argv.size());
  for (const std::string& a : log.argv) w.String(a);
  w.String(log.cwd);
  w.U64(log.environment.size());
  for (const std::string& e : log.environment) w.String(e);
  w.Raw(log.at_random.data(), log.at_random.size());
  w.U64(static_cast<std::uint64_t>(log.cpuid));
  w.U64(static_cast<std::uint64_t>(static_cast<std::int64_t>(log.cpu)));
  w.Raw(log.cpu_signature.data(), sizeof log.cpu_signature);
  w.U64(log.files.size());
  for (const LoggedFile& f : log.files) {
    w.String(f.path);
    for (std::uint64_t v : {f.device, f.inode, f.size, f.mtime_ns}) w.U64(v);
  }
  w.U64(log.syscalls.size());
  for (const LoggedSyscall& s : log.syscalls) {
    w.Raw(&s.entry, sizeof s.entry);
    w.Raw(&s.exit, sizeof s.exit);
    w.U64(static_cast<std::uint64_t>(s.signal_after));
    w.Bytes(s.siginfo);
    w.U64(s.writes.size());
    for (const LoggedWrite& lw : s.writes) {
      w.U64(lw.address);
      w.Bytes(lw.bytes);
    }
    w.U64(s.mapped ? 1 : 0);
    if (s.mapped) {
      w.String(s.mapped->path);
      w.U64(s.mapped->offset);
      w.U64(s.mapped->size);
    }
  }
  w.U64(log.rdtsc.size());
  for (std::uint64_t t : log.rdtsc) w.U64(t);
  w.U64(static_cast<std::uint64_t>(log.end));
  w.U64(static_cast<std::uint64_t>(static_cast<std::int64_t>(log.status)));
  w.U64(log.snapshots.size());
  for (const SnapshotRef& s : log.snapshots) {
    w.U64(s.syscall);
    w.String(s.file);
  }

  return WriteFileAtomically(path, w.data(), "the native log");
}

core::Expected<NativeLog> ReadNativeLog(const std::string& path) {
  core::Expected<std::vector<std::uint8_t>> file = ReadWholeFile(path, "the native log");
  if (!file.ok()) return file.status();
  return ParseNativeLog(*file, path);
}

core::Expected<NativeLog> ParseNativeLog(std::span<const std::uint8_t> data,
                                         const std::string& path) {
  Reader r(data.data(), data.size(), "native log " + path);
  if (!r.Magic(kMagic)) {
    for (const OlderVersion& v : kOlderVersions) {
      if (data.size() >= 8 && std::memcmp(data.data(), v.magic, 8) == 0)
        return core::Status::Corruption("native log " + path + ": an older version's log (" +
                                        v.magic + ", " + v.lacks + "): record the program again");
    }
    return core::Status::Corruption("native log " + path +
                                    ": not a backstep native log (bad magic)");
  }
  NativeLog log;
  log.argv.resize(r.Count(8));
  for (std::string& a : log.argv) r.String(&a);
  r.String(&log.cwd);
  log.environment.resize(r.Count(8));
  for (std::string& e : log.environment) r.String(&e);
  r.Raw(log.at_random.data(), log.at_random.size());
  const std::uint64_t cpuid = r.U64();
  if (cpuid > 1) r.Fail("bad CPUID mode " + std::to_string(cpuid));
  log.cpuid = static_cast<NativeLog::Cpuid>(cpuid);
  log.cpu = static_cast<std::int32_t>(r.U64());
  r.Raw(log.cpu_signature.data(), sizeof log.cpu_signature);
  log.files.resize(r.Count(40));
  for (LoggedFile& f : log.files) {
    r.String(&f.path);
    for (std::uint64_t* v : {&f.device, &f.inode, &f.size, &f.mtime_ns}) *v = r.U64();
  }
  log.syscalls.resize(r.Count(2 * sizeof(user_regs_struct) + 32));
  for (LoggedSyscall& s : log.syscalls) {
    r.Raw(&s.entry, sizeof s.entry);
    r.Raw(&s.exit, sizeof s.exit);
    s.signal_after = static_cast<int>(r.U64());
    r.Bytes(&s.siginfo);
    if (r.ok() && !s.siginfo.empty() && s.siginfo.size() != 128) r.Fail("bad siginfo");
    s.writes.resize(r.Count(16));
    for (LoggedWrite& lw : s.writes) {
      lw.address = r.U64();
      r.Bytes(&lw.bytes);
    }
    const std::uint64_t mapped = r.Count(24);
    if (r.ok() && mapped > 1) r.Fail("bad mapped-file count " + std::to_string(mapped));
    const std::uint64_t nr = s.entry.orig_rax;
    const bool succeeded = s.exit.rax <= ~std::uint64_t{4095};
    const bool shm = (nr == SYS_shmat || nr == SYS_shmdt) && succeeded;
    if (r.ok() && mapped == 1) {
      LoggedFileMapping& m = s.mapped.emplace();
      r.String(&m.path);
      m.offset = r.U64();
      m.size = r.U64();
      // A path and whole pages, only for a successful mmap (its length),
      // shmat or shmdt.
      if (r.ok() &&
          (m.path.empty() || m.size == 0 || m.size % 4096 != 0 ||
           !((nr == SYS_mmap && succeeded && m.size == (s.entry.rsi + 4095) / 4096 * 4096) || shm)))
        r.Fail("bad mapped file");
    }
    // Materialization maps or unmaps a segment's size.
    if (r.ok() && shm && mapped == 0) r.Fail("shmat or shmdt without its segment");
  }
  log.rdtsc.resize(r.Count(8));
  for (std::uint64_t& t : log.rdtsc) t = r.U64();
  const std::uint64_t end = r.U64();
  if (end > 1) r.Fail("bad end " + std::to_string(end));
  log.end = static_cast<NativeLog::End>(end);
  log.status = static_cast<std::int32_t>(r.U64());
  log.snapshots.resize(r.Count(16));
  std::uint64_t previous = 0;
  for (SnapshotRef& s : log.snapshots) {
    s.syscall = r.U64();
    r.String(&s.file);
    // In order, after a logged call (the last: a crash without another
    // system call after it), a plain file name.
    if (r.ok() && (s.syscall <= previous || s.syscall > log.syscalls.size()))
      r.Fail("snapshot at system call " + std::to_string(s.syscall) + " out of order or range");
    if (r.ok() && (s.file.empty() || s.file.find('/') != std::string::npos))
      r.Fail("bad snapshot file name");
    previous = s.syscall;
  }
  if (r.ok() && !r.at_end()) r.Fail("trailing bytes");
  if (!r.ok()) return core::Status::Corruption(r.error());
  const std::size_t slash = path.rfind('/');
  log.directory = slash == std::string::npos ? "." : path.substr(0, slash == 0 ? 1 : slash);
  return log;
}

std::vector<std::string> CurrentEnvironment() {
  std::vector<std::string> out;
  for (char** e = environ; e && *e; ++e) out.emplace_back(*e);
  return out;
}

std::array<std::uint32_t, 12> CpuSignature() {
  std::array<std::uint32_t, 12> s{};
  for (unsigned i = 0; i < 3; ++i) {
    const unsigned leaf = i == 2 ? 7 : i;
    __cpuid_count(leaf, 0, s[4 * i], s[4 * i + 1], s[4 * i + 2], s[4 * i + 3]);
  }
  // Leaf 1's ebx holds the APIC id of the CPU asking: not part of the model.
  s[5] &= 0x00ffffff;
  return s;
}

}  // namespace backstep::record
