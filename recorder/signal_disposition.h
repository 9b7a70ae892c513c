// What the kernel does with a signal sent to the recorded program, read from
// /proc/PID/status (SigCgt: handled, SigIgn: ignored), and the system call
// results that make it restart a call: the facts every engine needs to
// decide whether a signal is delivered, dropped or recorded without
// effects.
//
// Thread-safety: pure functions (they read /proc).
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>

namespace backstep::record {

// "SIGSEGV", or "signal 42" for a number without an abbreviation.
std::string SignalName(int sig);

// Whether the program has a handler for `sig` (true when /proc cannot be
// read: assume the worst).
bool HandlesSignal(pid_t pid, int sig);

// Whether the program ignores `sig` (SIG_IGN; false when unknown).
bool IgnoresSignal(pid_t pid, int sig);

// Whether the kernel would discard `sig`: ignored (SIG_IGN), or no handler
// and ignored by default (SIGCHLD, SIGURG, SIGWINCH).
bool DiscardsSignal(pid_t pid, int sig);

// Whether `sig`'s default action stops the process.
bool StopsByDefault(int sig);

// Whether `sig`'s default action ends the process (terminate or core dump):
// neither ignored by default (SIGCHLD, SIGURG, SIGWINCH), nor stopping,
// nor SIGCONT.
bool KillsByDefault(int sig);

// A system call's result that makes the kernel restart it when no handler
// runs (-ERESTARTSYS, -ERESTARTNOINTR, -ERESTARTNOHAND, -ERESTART_RESTARTBLOCK).
bool RestartsSyscall(std::uint64_t rax);

// Whether system call `nr` of x86-64, when it succeeds, cannot make a signal
// pending for its caller (read, write, mmap, clock_gettime...): it sends
// none (no kill family), changes no mask (no rt_sigprocmask, rt_sigreturn)
// and raises none itself (SIGPIPE and SIGXFSZ come with -EPIPE and -EFBIG;
// ioctl's job control and madvise's MADV_HWPOISON are left out). A signal
// pending when such a call returns came from elsewhere while it ran, but
// for one race: a pipe write that wrote some bytes and then found the
// reader gone returns their count with SIGPIPE pending. False for any call
// not known.
bool CannotRaiseSignal(std::uint64_t nr);

}  // namespace backstep::record
