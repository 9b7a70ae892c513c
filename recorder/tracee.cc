#include "recorder/tracee.h"

#include <dirent.h>
#include <elf.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/personality.h>
#include <sys/prctl.h>
#include <sys/ptrace.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

namespace backstep::record {
namespace {

constexpr std::size_t kPage = 4096;

std::string Errno(int e) { return std::strerror(e); }

// The tids of `leader`'s thread group, leader excluded (/proc/PID/task; a
// traced thread that exited stays listed until its tracer reaps it).
std::vector<pid_t> OtherThreads(pid_t leader) {
  std::vector<pid_t> tids;
  DIR* dir = opendir(("/proc/" + std::to_string(leader) + "/task").c_str());
  if (dir == nullptr) return tids;
  while (const dirent* entry = readdir(dir)) {
    const pid_t tid = static_cast<pid_t>(std::atoi(entry->d_name));
    if (tid > 0 && tid != leader) tids.push_back(tid);
  }
  closedir(dir);
  return tids;
}

// Reaps every thread of `leader`'s group, which is exiting (killed, or after
// exit_group), and returns the leader's exit status. Waits by tid, never for
// any child: the recorder's other children (the native engine's workers)
// keep their statuses for their own waits. The leader's exit is reported only
// after its other threads are reaped. nullopt when the leader is not (or no
// longer) this process's child.
std::optional<int> ReapThreadGroup(pid_t leader) {
  int status = 0;
  for (;;) {
    bool progressed = false;
    for (pid_t tid : OtherThreads(leader)) {
      int ignored = 0;
      if (waitpid(tid, &ignored, __WALL | WNOHANG) == tid) progressed = true;
    }
    const pid_t got = waitpid(leader, &status, __WALL | WNOHANG);
    if (got == leader && (WIFEXITED(status) || WIFSIGNALED(status))) return status;
    if (got < 0 && errno == ECHILD) return std::nullopt;
    if (got == leader) progressed = true;
    if (!progressed) usleep(1000);
  }
}

[[noreturn]] void ChildFail(int pipe_fd, int stage) {
  const int e[2] = {stage, errno};
  [[maybe_unused]] ssize_t n = write(pipe_fd, e, sizeof e);
  _exit(127);
}

// Child side of Spawn(): never returns.
[[noreturn]] void RunChild(const SpawnOptions& o, const std::string& path, int pipe_fd) {
  if (o.stdin_fd >= 0) dup2(o.stdin_fd, 0);
  if (o.stdout_fd >= 0) dup2(o.stdout_fd, 1);
  if (o.stderr_fd >= 0) dup2(o.stderr_fd, 2);
  // The program sees the recorder's fds 0-2 only, never the originals.
  for (int fd : {o.stdin_fd, o.stdout_fd, o.stderr_fd}) {
    if (fd > 2) close(fd);
  }
  if (!o.keep_aslr) personality(ADDR_NO_RANDOMIZE);
  if (o.trap_rdtsc && prctl(PR_SET_TSC, PR_TSC_SIGSEGV) != 0) ChildFail(pipe_fd, 2);
  if (ptrace(PTRACE_TRACEME, 0, nullptr, nullptr) != 0) ChildFail(pipe_fd, 1);
  std::vector<char*> argv;
  for (const std::string& a : o.argv) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  execv(path.c_str(), argv.data());
  ChildFail(pipe_fd, 3);
}

core::Status PtraceRefused(int e) {
  std::string msg = "ptrace refused (" + Errno(e) + ")";
  if (e == EPERM) {
    msg +=
        ": the system does not allow tracing here (in a container, run it with "
        "--cap-add=SYS_PTRACE or a seccomp profile that allows ptrace; check "
        "/proc/sys/kernel/yama/ptrace_scope)";
  }
  return core::Status::IOError(msg);
}

}  // namespace

std::string FindProgram(const std::string& name) {
  if (name.find('/') != std::string::npos) return access(name.c_str(), F_OK) == 0 ? name : "";
  const char* env = getenv("PATH");
  std::stringstream path(env ? env : "/usr/bin:/bin");
  std::string dir;
  while (std::getline(path, dir, ':')) {
    std::string candidate = (dir.empty() ? "." : dir) + "/" + name;
    if (access(candidate.c_str(), X_OK) == 0) return candidate;
  }
  return "";
}

core::Status CheckX86_64Elf(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return core::Status::NotFound(path + ": cannot open (" + Errno(errno) + ")");
  Elf64_Ehdr h{};
  in.read(reinterpret_cast<char*>(&h), sizeof h);
  if (!in || std::memcmp(h.e_ident, ELFMAG, SELFMAG) != 0) {
    return core::Status::Unsupported(path +
                                     ": not an ELF executable (scripts are not supported: "
                                     "record the interpreter with the script as argument)");
  }
  if (h.e_ident[EI_CLASS] != ELFCLASS64 || h.e_machine != EM_X86_64) {
    return core::Status::Unsupported(path +
                                     ": not an x86-64 program (backstep records x86-64 only)");
  }
  return core::Status::Ok();
}

core::Expected<Tracee> Tracee::Spawn(const SpawnOptions& o) {
  if (o.argv.empty()) return core::Status::InvalidArgument("no program to record");
  const std::string path = FindProgram(o.argv[0]);
  if (path.empty()) return core::Status::NotFound(o.argv[0] + ": program not found");
  if (core::Status s = CheckX86_64Elf(path); !s.ok()) return s;
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) return core::Status::IOError("pipe: " + Errno(errno));
  const pid_t pid = fork();
  if (pid < 0) return core::Status::IOError("fork: " + Errno(errno));
  if (pid == 0) {
    close(fds[0]);
    RunChild(o, path, fds[1]);
  }
  close(fds[1]);
  int err[2] = {0, 0};
  const ssize_t n = read(fds[0], err, sizeof err);
  close(fds[0]);
  int status = 0;
  if (n == static_cast<ssize_t>(sizeof err)) {
    waitpid(pid, &status, 0);
    if (err[0] == 1) return PtraceRefused(err[1]);
    if (err[0] == 2) return core::Status::IOError("prctl(PR_SET_TSC): " + Errno(err[1]));
    return core::Status::IOError(path + ": cannot execute (" + Errno(err[1]) + ")");
  }
  // The exec stop (SIGTRAP after a successful execve under PTRACE_TRACEME).
  if (waitpid(pid, &status, 0) != pid || !WIFSTOPPED(status)) {
    return core::Status::IOError(path + ": the program did not stop after exec");
  }
  const long options = PTRACE_O_EXITKILL | PTRACE_O_TRACECLONE | PTRACE_O_TRACEFORK |
                       PTRACE_O_TRACEVFORK | PTRACE_O_TRACEEXEC;
  if (ptrace(PTRACE_SETOPTIONS, pid, nullptr, options) != 0) {
    const int e = errno;
    kill(pid, SIGKILL);
    waitpid(pid, &status, 0);
    return PtraceRefused(e);
  }
  const int mem_fd = open(("/proc/" + std::to_string(pid) + "/mem").c_str(), O_RDWR | O_CLOEXEC);
  if (mem_fd < 0) {
    const int e = errno;
    kill(pid, SIGKILL);
    waitpid(pid, &status, 0);
    return core::Status::IOError("/proc/" + std::to_string(pid) + "/mem: " + Errno(e));
  }
  return Tracee(pid, mem_fd);
}

Tracee::~Tracee() {
  Kill();
  if (mem_fd_ >= 0) close(mem_fd_);
}

void Tracee::Kill() {
  if (pid_ <= 0) return;
  kill(pid_, SIGKILL);
  ReapThreadGroup(pid_);
  pid_ = -1;
}

core::Expected<Stop> Tracee::Step(int signal) {
  if (ptrace(PTRACE_SINGLESTEP, thread_, nullptr, signal) != 0) {
    return core::Status::IOError("PTRACE_SINGLESTEP: " + Errno(errno));
  }
  int status = 0;
  if (waitpid(thread_, &status, __WALL) != thread_)
    return core::Status::IOError("waitpid: " + Errno(errno));
  return Decode(thread_, status);
}

core::Status Tracee::Resume() {
  if (ptrace(PTRACE_SINGLESTEP, thread_, nullptr, 0) != 0) {
    return core::Status::IOError("PTRACE_SINGLESTEP: " + Errno(errno));
  }
  return core::Status::Ok();
}

core::Expected<std::optional<Stop>> Tracee::Poll(pid_t* tid, bool wait) {
  int status = 0;
  const pid_t got = waitpid(*tid, &status, __WALL | (wait ? 0 : WNOHANG));
  if (got == 0) return std::optional<Stop>();
  if (got < 0 || (*tid > 0 && got != *tid))
    return core::Status::IOError("waitpid: " + Errno(errno));
  *tid = got;
  return std::optional<Stop>(Decode(got, status));
}

core::Status Tracee::WaitNewThread(pid_t tid) {
  int status = 0;
  if (waitpid(tid, &status, __WALL) != tid) {
    return core::Status::IOError("waitpid (new thread): " + Errno(errno));
  }
  if (!WIFSTOPPED(status)) {
    return core::Status::IOError("the new thread " + std::to_string(tid) + " did not stop");
  }
  return core::Status::Ok();
}

core::Status Tracee::Detach(pid_t child) {
  if (ptrace(PTRACE_DETACH, child, nullptr, 0) != 0) {
    return core::Status::IOError("PTRACE_DETACH " + std::to_string(child) + ": " + Errno(errno));
  }
  return core::Status::Ok();
}

core::Status Tracee::Adopt(pid_t child) {
  const int fd = open(("/proc/" + std::to_string(child) + "/mem").c_str(), O_RDWR | O_CLOEXEC);
  if (fd < 0)
    return core::Status::IOError("/proc/" + std::to_string(child) + "/mem: " + Errno(errno));
  if (ptrace(PTRACE_DETACH, pid_, nullptr, 0) != 0) {
    const int e = errno;
    close(fd);
    return core::Status::IOError("PTRACE_DETACH " + std::to_string(pid_) + ": " + Errno(e));
  }
  close(mem_fd_);
  mem_fd_ = fd;
  pid_ = thread_ = child;
  return core::Status::Ok();
}

core::Status Tracee::ReopenMemory() {
  const std::string path = "/proc/" + std::to_string(pid_) + "/mem";
  const int fd = open(path.c_str(), O_RDWR | O_CLOEXEC);
  if (fd < 0) return core::Status::IOError(path + ": " + Errno(errno));
  close(mem_fd_);
  mem_fd_ = fd;
  return core::Status::Ok();
}

core::Expected<std::uint64_t> Tracee::InjectSyscall(pid_t tid, core::Address syscall_at,
                                                    std::uint64_t nr,
                                                    std::span<const std::uint64_t> args) {
  user_regs_struct saved{};
  if (ptrace(PTRACE_GETREGS, tid, nullptr, &saved) != 0)
    return core::Status::IOError("PTRACE_GETREGS " + std::to_string(tid) + ": " + Errno(errno));
  user_regs_struct call = saved;
  call.rip = syscall_at;
  call.rax = nr;
  // No system call in progress: the kernel must not restart one on resume.
  call.orig_rax = ~std::uint64_t{0};
  unsigned long long* const arg_regs[] = {&call.rdi, &call.rsi, &call.rdx,
                                          &call.r10, &call.r8,  &call.r9};
  for (std::size_t i = 0; i < args.size() && i < 6; ++i) *arg_regs[i] = args[i];
  if (ptrace(PTRACE_SETREGS, tid, nullptr, &call) != 0)
    return core::Status::IOError("PTRACE_SETREGS " + std::to_string(tid) + ": " + Errno(errno));
  int status = 0;
  if (ptrace(PTRACE_SINGLESTEP, tid, nullptr, 0) != 0 || waitpid(tid, &status, __WALL) != tid) {
    return core::Status::IOError("system call " + std::to_string(nr) + " in " +
                                 std::to_string(tid) + ": " + Errno(errno));
  }
  if (!WIFSTOPPED(status)) {
    return core::Status::IOError("process " + std::to_string(tid) + " ended during system call " +
                                 std::to_string(nr));
  }
  user_regs_struct after{};
  if (ptrace(PTRACE_GETREGS, tid, nullptr, &after) != 0 ||
      ptrace(PTRACE_SETREGS, tid, nullptr, &saved) != 0) {
    return core::Status::IOError("PTRACE_SETREGS " + std::to_string(tid) + ": " + Errno(errno));
  }
  return std::uint64_t{after.rax};
}

void Tracee::ReapAll(Stop* stop) {
  if (pid_ <= 0) return;
  if (const std::optional<int> status = ReapThreadGroup(pid_)) {
    *stop = Decode(pid_, *status);
  }
  pid_ = -1;
}

Stop Tracee::Decode(pid_t tid, int status) {
  Stop stop;
  if (WIFEXITED(status)) {
    stop.kind = Stop::kExited;
    stop.exit_code = WEXITSTATUS(status);
    if (tid == pid_) pid_ = -1;
  } else if (WIFSIGNALED(status)) {
    stop.kind = Stop::kKilled;
    stop.signal = WTERMSIG(status);
    if (tid == pid_) pid_ = -1;
  } else if (status >> 16 != 0) {
    stop.kind = Stop::kEvent;
    stop.event = status >> 16;
  } else if (WSTOPSIG(status) == SIGTRAP) {
    stop.kind = Stop::kStepped;
  } else {
    stop.kind = Stop::kSignal;
    stop.signal = WSTOPSIG(status);
  }
  return stop;
}

core::Status Tracee::GetRegs(user_regs_struct* regs) const {
  if (ptrace(PTRACE_GETREGS, thread_, nullptr, regs) != 0) {
    return core::Status::IOError("PTRACE_GETREGS: " + Errno(errno));
  }
  return core::Status::Ok();
}

core::Status Tracee::SetRegs(const user_regs_struct& regs) const {
  if (ptrace(PTRACE_SETREGS, thread_, nullptr, &regs) != 0) {
    return core::Status::IOError("PTRACE_SETREGS: " + Errno(errno));
  }
  return core::Status::Ok();
}

core::Status Tracee::GetXState(std::vector<std::uint8_t>* xstate) const {
  if (xstate->size() < 4096) xstate->resize(4096);
  iovec iov{xstate->data(), xstate->size()};
  if (ptrace(PTRACE_GETREGSET, thread_, reinterpret_cast<void*>(NT_X86_XSTATE), &iov) != 0) {
    return core::Status::IOError("PTRACE_GETREGSET(NT_X86_XSTATE): " + Errno(errno));
  }
  xstate->resize(iov.iov_len);
  return core::Status::Ok();
}

std::size_t Tracee::ReadMemory(core::Address address, std::span<std::uint8_t> out) const {
  std::size_t done = 0;
  while (done < out.size()) {
    const ssize_t n =
        pread(mem_fd_, out.data() + done, out.size() - done, static_cast<off_t>(address + done));
    if (n <= 0) break;
    done += static_cast<std::size_t>(n);
  }
  return done;
}

void Tracee::ReadMemoryZeroFill(core::Address address, std::span<std::uint8_t> out) const {
  std::size_t done = ReadMemory(address, out);
  while (done < out.size()) {
    // Skip to the next page; the failing one reads as zeros.
    const core::Address at = address + done;
    const std::size_t page_end = static_cast<std::size_t>((at / kPage + 1) * kPage - address);
    const std::size_t stop = std::min(page_end, out.size());
    std::memset(out.data() + done, 0, stop - done);
    done = stop;
    if (done < out.size()) done += ReadMemory(address + done, out.subspan(done));
  }
}

core::Status Tracee::WriteMemory(core::Address address, std::span<const std::uint8_t> data) const {
  const ssize_t n = pwrite(mem_fd_, data.data(), data.size(), static_cast<off_t>(address));
  if (n != static_cast<ssize_t>(data.size())) {
    return core::Status::IOError("write to tracee memory failed: " + Errno(errno));
  }
  return core::Status::Ok();
}

core::Expected<std::vector<Mapping>> Tracee::ReadMaps() const {
  std::ifstream in("/proc/" + std::to_string(pid_) + "/maps");
  if (!in) return core::Status::IOError("/proc/" + std::to_string(pid_) + "/maps: cannot open");
  std::vector<Mapping> maps;
  std::string line;
  while (std::getline(in, line)) {
    // start-end perms offset dev inode [name]
    Mapping m;
    unsigned long long start = 0, end = 0, offset = 0;
    char perms[8] = {};
    int name_at = 0;
    if (std::sscanf(line.c_str(), "%llx-%llx %7s %llx %*s %*s %n", &start, &end, perms, &offset,
                    &name_at) < 4) {
      continue;
    }
    m.start = start;
    m.size = end - start;
    m.read = perms[0] == 'r';
    m.write = perms[1] == 'w';
    m.exec = perms[2] == 'x';
    m.file_offset = offset;
    if (name_at > 0 && static_cast<std::size_t>(name_at) <= line.size())
      m.name = line.substr(name_at);
    maps.push_back(std::move(m));
  }
  return maps;
}

core::Expected<std::vector<std::uint8_t>> Tracee::ReadAuxv() const {
  std::ifstream in("/proc/" + std::to_string(pid_) + "/auxv", std::ios::binary);
  if (!in) return core::Status::IOError("/proc/" + std::to_string(pid_) + "/auxv: cannot open");
  return std::vector<std::uint8_t>(std::istreambuf_iterator<char>(in), {});
}

std::string Tracee::ExecutablePath() const {
  char buf[4096];
  const ssize_t n =
      readlink(("/proc/" + std::to_string(pid_) + "/exe").c_str(), buf, sizeof buf - 1);
  return n > 0 ? std::string(buf, static_cast<std::size_t>(n)) : "";
}

core::Status ClearStepFlagsInSignalFrame(const Tracee& tracee, core::Address rsp) {
  constexpr std::uint64_t kTf = 1u << 8, kRf = 1u << 16;
  const core::Address saved_flags = rsp + 8 + 8 + 8 + 24 + 136;
  std::uint64_t flags = 0;
  if (tracee.ReadMemory(saved_flags, {reinterpret_cast<std::uint8_t*>(&flags), 8}) != 8 ||
      (flags & (kTf | kRf)) == 0) {
    return core::Status::Ok();
  }
  flags &= ~(kTf | kRf);
  return tracee.WriteMemory(saved_flags, {reinterpret_cast<std::uint8_t*>(&flags), 8});
}

bool StatDescriptor(pid_t pid, std::uint64_t fd, struct stat* st) {
  const std::string path = "/proc/" + std::to_string(pid) + "/fd/" + std::to_string(fd);
  return stat(path.c_str(), st) == 0;
}

}  // namespace backstep::record
