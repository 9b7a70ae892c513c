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

// A system call's result that makes the kernel restart it when no handler
// runs (-ERESTARTSYS, -ERESTARTNOINTR, -ERESTARTNOHAND, -ERESTART_RESTARTBLOCK).
bool RestartsSyscall(std::uint64_t rax);

}  // namespace backstep::record
