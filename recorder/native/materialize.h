// Materialization, the second phase of `backstep record --engine native`:
// the emu engine (emu/emu_recorder.h) re-executes the run a native log
// (native_log.h) describes, from the program's initial image at exec,
// answering its system calls, rdtsc and cpuid from the log instead of the
// kernel and the CPU, and writes into `sink` the trace an emu recording of
// that run would be (the same positions, registers and writes).
//
// The program is started again (the log's argv and environment, ASLR off,
// the vDSO hidden, AT_RANDOM's bytes from the log) as the snapshot of its
// initial image; the working directory and the files mapped at exec must
// be the recording's (checked first). System calls whose effect lives in
// the process's kernel state run for real in the emu engine's tracee and
// must return what they returned natively: mmap (a file mapping becomes an
// anonymous one at the same address, filled with the logged contents, which
// the trace names as the logged file: mapping_names.h), munmap, mprotect,
// brk, mremap, madvise, arch_prctl, rt_sigaction, rt_sigprocmask,
// sigaltstack, rt_sigreturn, exit, exit_group. Every other one is answered:
// its logged result and memory writes.
//
// Divergence is never silent: at every system call the emulated registers
// (rax is the number; every GPR but rcx and r11, which `syscall` itself
// overwrites natively; rip, eflags, fs/gs base) must equal the logged ones;
// an executed call must return the logged result; the program must end
// after the last logged call, as it ended. Otherwise the error names the
// position, the instruction and the difference.
//
// Intervals: when the log lists snapshots (native_recorder.h), the run is
// cut there: interval 0 from exec to the first snapshot, interval k from
// snapshot k - 1 (restored into the emu engine's proxy process: snapshot.h)
// to the system call the next one follows, each materialized in a process
// of its own (`jobs` at once), answering the log's system calls from its
// snapshot's on and stopping after its last. Each writes its interval as
// finished UCIR: a part file (UsercornSink::CreatePart) of whole snappy
// chunks, without the file header; interval 0's starts with the keyframe,
// the others' continue with the writer state at their start (the
// snapshot's registers: the vector registers' halves; the fall-through pc:
// the snapshot's rip). The join only appends each part's bytes to `sink`'s
// file in order (UsercornSink::AppendPart: copy_file_range). The single
// pass (use_snapshots false) cuts its writer after the system
// call each snapshot follows (UsercornSink::Cut: the open frame closed, a
// short snappy chunk), as a part ends there, so both write the same file
// byte for byte. A divergence names its interval and the position in the
// joined trace; what the failing interval wrote before it stays in the
// trace, which is finished there.
//
// Signals (LoggedSyscall::signal_after): delivered, with the logged
// siginfo, right after the emulated call returns (SyscallSource::Signal).
// One that interrupted the call (it returned -ERESTART*): the call returns
// that in the tracee with its number in orig_rax, so that the kernel's
// delivery turns it into -EINTR or a restart in the handler's frame as it
// did natively; a restarted call is then answered by the log's next one.
// fork/vfork are answered from the log (the result: the child's pid).
//
// Thread-safety: one materialization per process (the process environment
// is the log's while it runs); with a host-CPUID log
// (NativeLog::Cpuid::kHost) the calling thread runs on the log's CPU for
// each cpuid it answers (and the signature check), elsewhere as before.
#pragma once

#include <functional>
#include <string>

#include "backstep/core/expected.h"
#include "recorder/native/native_log.h"
#include "recorder/recorder.h"
#include "recorder/recording_sink.h"
#include "recorder/usercorn_sink.h"

namespace backstep::record {

struct MaterializeOptions {
  // Intervals materialized at once (each in a process of its own), when the
  // log has snapshots.
  unsigned jobs = 1;
  // False: one pass from exec even when the log has snapshots.
  bool use_snapshots = true;
  // Where the intervals' part files go (in a directory of their own,
  // removed after the join); empty: the system's temporary directory.
  std::string part_directory;
  // Set (and the log has snapshots): the last interval, where the program
  // crashed or exited, is materialized first and its worker also writes it
  // alone to this UCIR file (its position 0 is the last snapshot: a
  // keyframe), then on_tail() is called while the other intervals go on:
  // the end of the run can be debugged before the whole trace exists.
  std::string tail_path;
  std::function<void()> on_tail;
};

// `sink` is finished (its file complete) in every case where it got
// anything, an error included.
core::Expected<RecordResult> Materialize(const NativeLog& log, UsercornSink& sink,
                                         const MaterializeOptions& options = {});

}  // namespace backstep::record
