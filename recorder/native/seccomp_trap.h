// InstallSyscallTrap: makes every system call of a tracee stopped at its
// exec stop a ptrace stop (PTRACE_EVENT_SECCOMP), and nothing else, so the
// native engine (native_recorder.h) can let the program run at full speed
// with PTRACE_CONT between system calls.
//
// The tracee itself installs a seccomp-bpf filter returning
// SECCOMP_RET_TRACE for every x86-64 system call but the allowed one's (and killing the process
// for any other ABI): prctl(PR_SET_NO_NEW_PRIVS) and seccomp() are run in
// it through a `syscall` written over its first instruction, the filter
// written below its stack pointer; both are restored, so the program starts
// from the kernel's exact image. Then PTRACE_O_TRACESECCOMP and
// PTRACE_O_TRACESYSGOOD are added to the tracee's ptrace options.
//
// The filter (and no_new_privs) stays for the program's life: a child it
// forks inherits it, which is why the native engine refuses fork.
#pragma once

#include <cstdint>
#include <optional>

#include "backstep/core/status.h"
#include "recorder/tracee.h"

namespace backstep::record {

// `allowed_ip`: the one `syscall` whose calls are let through untraced
// (seccomp_data.instruction_pointer, the address after it: the system call
// buffer's, syscall_buffer.h).
core::Status InstallSyscallTrap(Tracee& tracee,
                                std::optional<std::uint64_t> allowed_ip = std::nullopt);

}  // namespace backstep::record
