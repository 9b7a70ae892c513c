// TraceTarget: the gdbstub::Target that serves a recorded trace.
//
// One TraceTarget per client: it owns a core::Cursor of a shared core::Trace
// and adapts it to the stub (registers by gdb regnum, virtual memory,
// threads, forward and reverse stepping and continuing through
// core::RunUntil, breakpoints, watchpoints, `tfind` frames, monitor
// commands). The Trace may be shared by any number of targets.
//
// Armed moves (docs/lldb.md §2.2): `monitor goto N`, `monitor reverse-stepi`
// and `monitor direction reverse|forward` (or the controller methods below,
// for the in-process LLDB plugin) do not move the cursor; the next resume
// packet (s, c, vCont, bs, bc) performs the armed move instead of its own and
// answers with an ordinary stop reply, so the client refreshes its caches.
// With the direction set to reverse, forward packets run backwards.
//
// Trace frames (QTFrame, `tfind`): frame n is position n (the state before
// event n; the last frame is the final state, position event_count) for
// traces whose events are instructions, as in `backstep export`; for tfile
// traces, whose events are frames, frame n is the state after event n
// (position n + 1) and its tracepoint is the frame's own. Every other trace
// has one implicit tracepoint, number 1, that collected every position
// (`tfind tracepoint 1` = the next frame; other numbers find nothing).
// `tfind pc/range/outside/line` come from the pc index: a frame's pc is that
// of the thread executing its event. Positions before a non-instruction
// event (syscall effects, interrupt delivery) are found when they lie in the
// run of such events just before an indexed instruction or the end (the
// usual case: the event keeps the pc); one whose event moves the pc elsewhere
// (an interrupt entering a handler) is found by `tfind N` only.
// Frames stop below 2^31 (gdb's frame numbers are C ints).
//
// Thread-safety: as gdbstub::Target (one thread at a time); the controller
// methods must be called from the same thread as the session (or while no
// packet is being handled).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "backstep/core/arch.h"
#include "backstep/core/expected.h"
#include "backstep/core/search.h"
#include "backstep/core/trace.h"
#include "backstep/gdbstub/target.h"

namespace backstep::gdbstub {

struct TraceTargetOptions {
  // GdbFeature bits of the served register layout (target.xml and `g`);
  // 0: the trace architecture's default (core::DefaultGdbFeatures).
  std::uint32_t features = 0;
  // The auxiliary vector (qXfer:auxv:read): the recorded one
  // (process_image.h RecordedAuxv) or one synthesized from the executable.
  // Empty: none (REVEN).
  std::vector<std::uint8_t> auxv;
  // The executable the client should load (qXfer:exec-file:read, and shown
  // by `monitor info`). Empty: unknown.
  std::string exe_path;
  // Where the files the trace names (the executable, its libraries) are
  // read from for vFile (`serve --sysroot`): "" is /, as recorded.
  std::string sysroot;
  // `watch` reports only value-changing writes (gdb resumes silently on an
  // unchanged value anyway); switchable with `monitor watch-filter`.
  bool watch_only_changes = true;
  // The process id the client sees (non-zero). LLDB refuses to connect a
  // second target to a pid one of its targets already debugs: the plugin
  // gives each open trace its own.
  std::uint64_t pid = 1;
};

// What every front end (`backstep serve`, the LLDB plugin) serves for
// `trace`: the register layout (the default one, plus gdb's avx512 feature
// when a thread's initial registers know k0, as `backstep record` writes
// them on an AVX-512 machine), the auxiliary vector (the recorded one; else,
// when `exe` is given, one synthesized from its ELF headers, so a debugger
// can relocate a PIE) and the executable's path (`exe`, else the recorded
// one). Errors: SynthesizeAuxv's (only when the trace recorded no auxv).
core::Expected<TraceTargetOptions> ServeOptionsFor(const core::Trace& trace,
                                                   const std::string& exe);

// gdb's reverse-next as one armed move (docs/lldb.md §7): the debugger
// computes the line rows from its own line tables; the stub un-executes
// instructions of the current thread until the start of a line, the way gdb
// does with one `bs` per instruction:
//   - inside the current row: stop at its start, unless the start is the
//     function's entry (then go on back into the caller);
//   - after un-executing a `ret` (the word at the new rsp is the pc it
//     returned to): skip the whole callee, back to its `call` (the last
//     write of that stack slot), as gdb's step-resume breakpoint does;
//   - in another row of the function: stop if it is the row's start and
//     the line differs, else make it the current row and go on;
//   - in the caller's row (stepped back out through the call): likewise;
//   - anywhere else (no line information): stop.
// User breakpoints (a step landing on one, or one hit inside a skipped
// callee) and watched writes stop it early, as they stop gdb.
struct LineRow {
  core::Address start = 0;  // a row covers [start, next row's start or the function's end)
  std::uint32_t line = 0;
};
struct ReverseNextPlan {
  core::Address function_start = 0, function_end = 0;  // the current function
  std::vector<LineRow> rows;  // its rows, sorted by start (merged as the debugger merges them)
  // The caller's row holding the call (both 0 when unknown).
  core::Address caller_row_start = 0, caller_row_end = 0;
  std::uint32_t caller_line = 0;
};

// The controller API of a served trace (LLDB plugin; monitor commands use
// the same functions).
class TraceController {
 public:
  virtual ~TraceController() = default;
  virtual core::Position position() const = 0;
  // Arms a move to `p` (clamped to the trace) for the next resume.
  virtual void ArmGoto(core::Position p) = 0;
  // Arms one reverse instruction step for the next resume.
  virtual void ArmReverseStep() = 0;
  // Arms gdb's reverse-finish: back to the `call` that stored the current
  // frame's return address at `return_slot` (CFA - 8 on x86-64), i.e. the
  // last write of those 8 bytes before now, which is also right for
  // recursive calls. Stops earlier at breakpoints and watched writes.
  // Returns the call's position. NotFound: nothing wrote the slot before now.
  virtual core::Expected<core::Position> ArmReverseFinish(core::Address return_slot) = 0;
  // Arms gdb's reverse-next (ReverseNextPlan). InvalidArgument: the rows are
  // not sorted or lie outside the function.
  virtual core::Status ArmReverseNext(ReverseNextPlan plan) = 0;
  // Direction of the forward packets (s, c, vCont) until changed.
  virtual void SetDirection(core::Direction direction) = 0;
  virtual core::Direction direction() const = 0;
};

// A target over `trace`, positioned at 0. Errors: the cursor's (opening the
// reader). Its TraceController is AsTraceController's, and lives as long as
// the target.
core::Expected<std::unique_ptr<Target>> NewTraceTarget(std::shared_ptr<const core::Trace> trace,
                                                       TraceTargetOptions options = {});

// The controller of a target made by NewTraceTarget (nullptr otherwise).
TraceController* AsTraceController(Target& target);

}  // namespace backstep::gdbstub
