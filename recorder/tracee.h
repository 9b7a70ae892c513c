// Tracee: one Linux x86-64 process under ptrace, for the recorder and its
// tests.
//
// Spawn() forks; the child disables ASLR (unless asked not to), makes rdtsc
// fault (PR_TSC_SIGSEGV, so the recorder can record its result), asks to be
// traced and execs. The parent waits for the exec stop and sets the ptrace
// options (exit-kill, clone/fork/vfork/exec events). A failed exec is
// reported with the child's errno through a close-on-exec pipe.
//
// Threads: the tracee's threads (created with clone, traced automatically)
// are driven one at a time: Select() names the thread that Step(),
// GetRegs(), SetRegs(), GetXState() and Resume() act on (the leader at
// first). Memory and maps are the process's.
//
// Thread-safety: one thread at a time; the thread that spawned the tracee
// must drive it (ptrace is per-thread).
#pragma once

#include <sys/stat.h>
#include <sys/types.h>
#include <sys/user.h>

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "backstep/core/expected.h"
#include "recorder/recording_sink.h"

namespace backstep::record {

struct SpawnOptions {
  std::vector<std::string> argv;  // argv[0] is the program (searched in PATH)
  bool keep_aslr = false;
  bool trap_rdtsc = true;
  int stdout_fd = -1, stderr_fd = -1, stdin_fd = -1;  // -1: inherit
};

// What a resume ended with.
struct Stop {
  enum Kind { kStepped, kSignal, kEvent, kExited, kKilled } kind = kStepped;
  int signal = 0;     // kSignal, kKilled
  int event = 0;      // kEvent: PTRACE_EVENT_*
  int exit_code = 0;  // kExited
};

class Tracee {
 public:
  // Unsupported when PROG is not an x86-64 ELF executable, NotFound when it
  // does not exist, IOError (naming EPERM and its usual causes) when ptrace
  // is refused.
  static core::Expected<Tracee> Spawn(const SpawnOptions& options);
  Tracee(Tracee&& other) noexcept
      : pid_(other.pid_), mem_fd_(other.mem_fd_), thread_(other.thread_) {
    other.pid_ = -1;
    other.mem_fd_ = -1;
  }
  Tracee& operator=(Tracee&&) = delete;
  ~Tracee();  // kills the process if it is still alive

  pid_t pid() const { return pid_; }
  bool alive() const { return pid_ > 0; }

  // Single-steps the selected thread (delivering `signal` if not 0) and
  // waits for its next stop. The exit of a thread other than the leader
  // leaves the process alive (ReapAll() ends it after exit_group).
  core::Expected<Stop> Step(int signal = 0);
  void Kill();

  void Select(pid_t tid) { thread_ = tid; }
  pid_t thread() const { return thread_; }
  // Single-steps the selected thread without waiting (a system call that
  // may block runs while other threads are stepped); Poll() collects it.
  core::Status Resume();
  // The next stop of thread *tid (any thread when *tid is -1; *tid is then
  // set), resumed by Resume(); none yet unless `wait`.
  core::Expected<std::optional<Stop>> Poll(pid_t* tid, bool wait);
  // Waits for a new thread's first stop (after PTRACE_EVENT_CLONE).
  core::Status WaitNewThread(pid_t tid);
  // After the process exited (exit_group, a fatal signal): reaps every
  // thread; the leader's status in *stop.
  void ReapAll(Stop* stop);
  // A child process created by fork/vfork/clone (stopped, after
  // WaitNewThread): Detach() lets it run untraced; Adopt() detaches this
  // process instead and makes the child the tracee (selected, memory).
  core::Status Detach(pid_t child);
  core::Status Adopt(pid_t child);
  // After an execve: memory is read from the new image (an open
  // /proc/PID/mem keeps the old address space).
  core::Status ReopenMemory();

  // Runs system call nr(args) in thread `tid` (stopped at a signal or step
  // stop) by stepping the `syscall` instruction at `syscall_at`, without
  // writing memory; its registers are restored afterwards. The call's result.
  core::Expected<std::uint64_t> InjectSyscall(pid_t tid, core::Address syscall_at, std::uint64_t nr,
                                              std::span<const std::uint64_t> args);

  core::Status GetRegs(user_regs_struct* regs) const;
  core::Status SetRegs(const user_regs_struct& regs) const;
  // NT_X86_XSTATE in the standard (non-compacted) XSAVE layout.
  core::Status GetXState(std::vector<std::uint8_t>* xstate) const;

  // Reads what is readable of [address, address + out.size()); returns the
  // number of bytes read from the start (short at an unmapped page).
  std::size_t ReadMemory(core::Address address, std::span<std::uint8_t> out) const;
  // Like ReadMemory, but page by page: unreadable pages become zeros.
  void ReadMemoryZeroFill(core::Address address, std::span<std::uint8_t> out) const;
  core::Status WriteMemory(core::Address address, std::span<const std::uint8_t> data) const;

  core::Expected<std::vector<Mapping>> ReadMaps() const;
  core::Expected<std::vector<std::uint8_t>> ReadAuxv() const;
  std::string ExecutablePath() const;

 private:
  Tracee(pid_t pid, int mem_fd) : pid_(pid), mem_fd_(mem_fd), thread_(pid) {}
  Stop Decode(pid_t tid, int status);
  pid_t pid_ = -1;
  int mem_fd_ = -1;  // /proc/PID/mem: reads what PTRACE may read
  pid_t thread_ = -1;
};

// In the signal frame the kernel just built at `rsp` (the handler's first
// instruction: rt_sigframe's pretcode, uc_flags, uc_link, uc_stack, then
// sigcontext with rflags at +136), clears the trap and resume flags that
// single-stepping and the fault set, so rt_sigreturn does not restore them
// into the program.
core::Status ClearStepFlagsInSignalFrame(const Tracee& tracee, core::Address rsp);

// Unsupported unless `path` is an x86-64 ELF file; NotFound if missing.
core::Status CheckX86_64Elf(const std::string& path);
// argv[0] resolved through PATH like execvp; "" when not found.
std::string FindProgram(const std::string& name);
// The file descriptor `fd` of process `pid` refers to (stat of
// /proc/PID/fd/FD); false when it is not open or cannot be seen.
bool StatDescriptor(pid_t pid, std::uint64_t fd, struct stat* st);

}  // namespace backstep::record
