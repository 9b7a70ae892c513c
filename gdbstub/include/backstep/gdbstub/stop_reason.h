// StopReason: why a resumed target stopped, as the stub reports it.
//
// A Target's resume returns one of these small structs; FormatStopReply() is
// the one place that turns them into a stop reply (`T05thread:p1.1;...`),
// honouring what the client and the stub negotiated. Nothing else in the stub
// writes `T` or `W` replies (`k`'s `X09` is a kill acknowledgement).
//
//   DoneStep      a step finished                      T05
//   SwBreak       a software breakpoint (PC = its address, no adjustment)
//                                                      T05 ... swbreak:;
//   HwBreak       a hardware breakpoint                T05 ... hwbreak:;
//   Watch         a data watchpoint fired; `addr` lies inside the watched
//                 range                                T05 ... watch:<addr>;
//   HistoryEdge   no more history in that direction    T05 ... replaylog:begin;
//   MoveDone      an armed move (goto, reverse-stepi/next/finish) ended
//                                                      T05 ... reason:exception;
//   Interrupted   the client sent 0x03                 T02 ...
//   Exited        the process exited (a trace that records the exit)  W<code>
//   Signaled      the trace delivers signal `number` (Linux) next     T<sig>
//   SyscallEntry  thread is about to make system call `number`  T05 ... syscall_entry:<n>;
//   SyscallReturn thread has made system call `number`          T05 ... syscall_return:<n>;
//   Terminated    the process was killed by signal `number` (a trace that
//                 records it)                                          X<sig>
//   Execd         the process's image changed (execve) between the last
//                 position and this one; `path` is the executable of the
//                 image now current (the old one after a reverse move)
//                                                      T05 ... exec:<hex path>;
//                 (only when the client offered exec-events+: gdb; else
//                 a plain T05), and for LLDB the exception reason
//                 "exec PATH"
//
// The end of a trace going forward is HistoryEdge{kEnd}, never Exited: a `W`
// reply ends the inferior in the client and with it every reverse command.
//
// LLDB (19 and 22) keeps stepping while the pc has not changed and ignores a
// stop of a thread it did not resume: HistoryEdge and MoveDone are also
// reported as LLDB's `exception` stop reason with a description ("end of
// the recorded history", "moved to position N"), which no LLDB step plan
// explains, so every LLDB command stops there; with QListThreadsInStopReply
// (LLDB only) `jstopinfo:` gives every thread a MoveDone's reason, so a move
// that ends in another thread also ends the step. gdb ignores these keys.
//
// Thread-safety: plain values.
#pragma once

#include <cstdint>
#include <string>
#include <variant>

#include "backstep/core/types.h"

namespace backstep::gdbstub {

class Target;

enum class WatchKind : unsigned char { kWrite, kRead, kAccess };

struct DoneStep {
  bool operator==(const DoneStep&) const = default;
};
struct SwBreak {
  bool operator==(const SwBreak&) const = default;
};
struct HwBreak {
  bool operator==(const HwBreak&) const = default;
};
struct Watch {
  WatchKind kind = WatchKind::kWrite;
  core::Address addr = 0;  // the data address, inside the watched range
  bool operator==(const Watch&) const = default;
};
struct HistoryEdge {
  enum class Side : unsigned char { kBegin, kEnd };
  Side side = Side::kEnd;
  bool operator==(const HistoryEdge&) const = default;
};
struct MoveDone {
  core::Position position;  // where it ended ("moved to position N")
  bool operator==(const MoveDone&) const = default;
};
struct Interrupted {
  bool operator==(const Interrupted&) const = default;
};
struct Exited {
  std::uint8_t code = 0;
  bool operator==(const Exited&) const = default;
};

// `number` is Linux's; the reply carries gdb's number for it (gdb's remote
// protocol numbers signals its own way) or, for LLDB, Linux's.
struct Signaled {
  int number = 0;
  bool operator==(const Signaled&) const = default;
};

struct SyscallEntry {
  std::uint64_t number = 0;
  bool operator==(const SyscallEntry&) const = default;
};
struct SyscallReturn {
  std::uint64_t number = 0;
  bool operator==(const SyscallReturn&) const = default;
};
struct Terminated {
  int number = 0;  // Linux's, as Signaled's
  bool operator==(const Terminated&) const = default;
};

struct Execd {
  std::string path;
  bool operator==(const Execd&) const = default;
};

using StopReason =
    std::variant<DoneStep, SwBreak, HwBreak, Watch, HistoryEdge, MoveDone, Interrupted, Exited,
                 Signaled, SyscallEntry, SyscallReturn, Terminated, Execd>;

// What was negotiated with the client, as far as stop replies care.
struct StopReplyOptions {
  bool multiprocess = false;          // thread ids as p<pid>.<tid>
  bool swbreak = false;               // both sides sent swbreak+: `swbreak:` allowed
  bool hwbreak = false;               // both sides sent hwbreak+: `hwbreak:` allowed
  bool list_threads = false;          // QListThreadsInStopReply accepted: threads:, thread-pcs:
  bool host_signals = false;          // the client numbers signals as the host does (LLDB)
  bool libraries_changed = false;     // `library:` (LLDB re-reads qXfer:libraries-svr4)
  bool frame_registers_only = false;  // expedite RegisterLayout::frame only (gdb)
  bool exec_events = false;           // the client offered exec-events+: `exec:` allowed
};

// The stop reply for `reason` at the target's current position:
//   T<sig>thread:<id>;<expedited regnum>:<value>;...;<reason key>;[threads:...;thread-pcs:...;]
// sig is 05 (SIGTRAP) for every trace stop, 02 (SIGINT) for Interrupted and
// the signal's number (gdb's, or Linux's with host_signals) for Signaled.
// Expedited registers are those of Target::register_layout() whose bytes are
// all known: `frame` with frame_registers_only (when the layout has one),
// else `expedited`. Without negotiation, SwBreak/HwBreak become a plain T05 (gdb
// rejects an unnegotiated `swbreak:`). Exited gives `W<code>` (with
// `;process:<pid>` when multiprocess).
std::string FormatStopReply(const StopReason& reason, Target& target,
                            const StopReplyOptions& options);

}  // namespace backstep::gdbstub
