// Snapshots of a natively recorded process (native_recorder.h), taken at a
// system call's exit stop, from which materialization (materialize.h)
// re-executes the interval that follows independently of the ones before.
//
// A snapshot is a dump, not a checkpoint process: every register (GPRs and
// the XSAVE image), the signal mask, the dispositions and alternate stack
// the program set (tracked from its rt_sigaction and sigaltstack calls),
// the mappings (ranges and protections) and the contents of every readable
// mapping but [vdso], [vvar] and [vsyscall] (non-zero runs; the rest is
// zeros). Its size is the program's resident image, written to its own file
// next to the log as it is taken (nothing accumulates in memory).
//
// RestoreSnapshot() turns the emu engine's proxy process, stopped at exec,
// into the snapshot: it replays the log's mapping calls before the
// snapshot (mmap, munmap, mprotect, brk, mremap: the same kernel state,
// heap end included), grows the stack, sets the dispositions, alternate
// stack and mask, checks that the mappings now cover the snapshot's with
// the same protections, and writes every mapping's contents and every
// register.
//
// The file format: snapshot_file.h.
//
// Thread-safety: plain functions over one tracee.
#pragma once

#include <cstdint>

#include "backstep/core/expected.h"
#include "recorder/native/native_log.h"
#include "recorder/native/snapshot_file.h"
#include "recorder/tracee.h"

namespace backstep::record {

// The process `tracee` (stopped at a system call's exit stop) now.
core::Expected<Snapshot> TakeSnapshot(const Tracee& tracee, const SignalSetup& signals);

// Makes `proxy` (the emu engine's, stopped at exec of the same program) the
// snapshot's process; `log` holds the system calls before it. An error says
// which replayed call or mapping differs.
core::Status RestoreSnapshot(Tracee& proxy, const NativeLog& log, const Snapshot& snapshot);

// The arguments that run logged mmap `entry` (which returned `result`) in a
// process that lacks the file: anonymous memory at the same address.
void MmapArgumentsWithoutFile(std::uint64_t result, user_regs_struct* entry);

// The system call that stands for logged call `call` (which succeeded) in
// the proxy, which lacks its file or segment: its arguments into *regs (rdi
// to r9), its number returned. mmap: MmapArgumentsWithoutFile. shmat: an
// mmap of anonymous memory of the segment's size (call.mapped) at the
// address it got, readable, writable unless SHM_RDONLY, executable with
// SHM_EXEC. shmdt: a munmap of the attachment it detached. Any other call:
// itself. Each returns what the logged call returned.
std::uint64_t ProxyCall(const LoggedSyscall& call, user_regs_struct* regs);

}  // namespace backstep::record
