// Optional capabilities of a gdbstub::Target.
//
// A Target exposes each capability through a nullable accessor
// (Target::reverse_execution(), breakpoints(), ...). The session advertises
// in qSupported exactly the capabilities that exist and routes their packets
// only when they exist; a missing capability makes its packets answer ""
// (unsupported). A capability is either implemented and tested, or absent:
// never a placeholder (a "reverse step" that steps forward).
//
// Every method is called from the session's thread, one request at a time,
// and must return promptly except the resumes, which poll `interrupt`.
//
// Thread-safety: as for Target.
#pragma once

#include <atomic>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "backstep/core/expected.h"
#include "backstep/core/status.h"
#include "backstep/core/trace_reader.h"
#include "backstep/core/types.h"
#include "backstep/gdbstub/stop_reason.h"

namespace backstep::gdbstub {

enum class ResumeKind : unsigned char { kStep, kContinue };

// `bs` / `bc` (qSupported: ReverseStep+, ReverseContinue+).
class ReverseExecution {
 public:
  virtual ~ReverseExecution() = default;
  // Moves the current position backwards: one instruction of `thread` (any
  // thread when nullopt) for kStep; to the closest earlier breakpoint or
  // watched write for kContinue (docs/protocol.md §6). At position 0 the position stays
  // and the reason is HistoryEdge{kBegin}. Polls `*interrupt` (when non-null)
  // during long searches and returns Interrupted once it is set.
  virtual core::Expected<StopReason> ResumeBackward(ResumeKind kind,
                                                    std::optional<core::ThreadId> thread,
                                                    const std::atomic<bool>* interrupt) = 0;
};

// vCont;r (range stepping; `vCont?` lists `r`): gdb's `next`/`step` over a
// line in one round trip instead of one `vCont;s` (and its memory reads)
// per instruction. gdb 13 range-steps only forwards.
class RangeStepping {
 public:
  virtual ~RangeStepping() = default;
  // Steps `thread` (any thread when nullopt) forward once, then keeps
  // stepping it while its pc is in [start, end). Stops earlier, as a step
  // or a continue would, at a breakpoint at the new pc, a watched access,
  // the end of the history, or once `*interrupt` is set. start == end: one
  // step.
  virtual core::Expected<StopReason> RangeStep(core::Address start, core::Address end,
                                               std::optional<core::ThreadId> thread,
                                               const std::atomic<bool>* interrupt) = 0;
};

enum class BreakpointType : unsigned char { kSoftware, kHardware };

// Z0/z0 and Z1/z1 (qSupported: swbreak+, hwbreak+). Never patches memory.
class Breakpoints {
 public:
  virtual ~Breakpoints() = default;
  // `kind` is the client's breakpoint kind (1 on x86). Inserting an existing
  // breakpoint or removing a missing one is not an error (LLDB re-inserts).
  virtual core::Status InsertBreakpoint(BreakpointType type, core::Address addr,
                                        std::uint64_t kind) = 0;
  virtual core::Status RemoveBreakpoint(BreakpointType type, core::Address addr,
                                        std::uint64_t kind) = 0;
};

// Z2/z2 (write), Z3/z3 (read), Z4/z4 (access). Kinds a trace cannot
// observe (reads, when the format records no reads) answer "".
class Watchpoints {
 public:
  virtual ~Watchpoints() = default;
  virtual bool Supports(WatchKind kind) const = 0;
  // REQUIRES: Supports(kind). Must be cheap: LLDB removes and re-inserts
  // every watchpoint around every stop.
  virtual core::Status InsertWatchpoint(WatchKind kind, core::Address addr,
                                        std::uint64_t length) = 0;
  virtual core::Status RemoveWatchpoint(WatchKind kind, core::Address addr,
                                        std::uint64_t length) = 0;
};

// `tfind` over the live stub (QTFrame, qTStatus; docs/protocol.md §8). Frame and
// tracepoint numbers are C ints on gdb's side: both stay below 2^31.
struct FrameByNumber {
  std::uint32_t frame = 0;
};
struct FrameByPc {  // first frame after the current one whose PC is `pc`
  core::Address pc = 0;
};
struct FrameByTracepoint {  // first frame after the current one of tracepoint `tracepoint`
  std::uint32_t tracepoint = 0;
};
struct FrameInRange {  // first frame after the current one with lo <= PC <= hi
  core::Address lo = 0, hi = 0;
};
struct FrameOutsideRange {  // first frame after the current one with PC outside [lo, hi]
  core::Address lo = 0, hi = 0;
};
using TraceFrameQuery =
    std::variant<FrameByNumber, FrameByPc, FrameByTracepoint, FrameInRange, FrameOutsideRange>;

struct TraceFrameHit {
  std::uint32_t frame = 0;
  std::uint32_t tracepoint = 0;
};

class TraceFrames {
 public:
  virtual ~TraceFrames() = default;
  // Number of frames (qTStatus tframes:).
  virtual std::uint64_t frame_count() = 0;
  // The frame matching `query`. Searches (all but FrameByNumber) start after
  // `current`, or at frame 0 when no frame is selected. nullopt: no match.
  virtual std::optional<TraceFrameHit> FindFrame(const TraceFrameQuery& query,
                                                 std::optional<std::uint32_t> current) = 0;
  // From now on, Target register and memory reads answer at `frame`'s
  // position; nullopt returns them to the current position.
  virtual core::Status SelectFrame(std::optional<std::uint32_t> frame) = 0;
  // The tracepoints, trace state variables and status of a trace recorded by
  // gdb tracepoints, uploaded to gdb at connection (qTfP/qTsP, qTfV/qTsV) and
  // answered to qTStatus. nullptr: none (one implicit tracepoint).
  virtual const core::TracepointDefinitions* tracepoint_definitions() { return nullptr; }
  // Trace state variable `number` at the selected frame (else at the current
  // position's frame), for qTV; nullopt: not collected there.
  virtual std::optional<std::int64_t> TraceVariable(std::int32_t number) {
    (void)number;
    return std::nullopt;
  }
  // qXfer:traceframe-info:read for the selected frame: what it collected
  // (<memory start= length=/> ranges, <tvar id=/>), so gdb shows everything
  // else as <unavailable>, as after `target tfile`. Offered in qSupported only
  // when tracepoint_definitions() is set (frames that know only what they
  // collected); nullopt: no frame is selected.
  virtual std::optional<std::string> TraceframeInfo() { return std::nullopt; }
};

// qRcmd (`monitor ...`).
class MonitorCommands {
 public:
  virtual ~MonitorCommands() = default;
  // Runs `command` ("goto 5") and returns its console output (any text,
  // possibly empty). An error becomes an `E` reply.
  virtual core::Expected<std::string> RunMonitorCommand(std::string_view command) = 0;
};

// qMemoryRegionInfo (LLDB's `memory region`, and its unwinder).
struct MemoryRegion {
  core::Address start = 0;
  std::uint64_t size = 0;  // 0 only for the last gap, up to the end of the address space
  bool mapped = false;     // false: a gap; the permissions are ignored
  bool readable = false, writable = false, executable = false;
  std::string name;  // a file path, "[stack]", or empty
};

class MemoryMap {
 public:
  virtual ~MemoryMap() = default;
  // The mapping containing `addr`, or the unmapped gap around it.
  virtual MemoryRegion RegionAt(core::Address addr) = 0;
};

// Signals the trace delivered and system calls it made (QPassSignals,
// qXfer:siginfo:read, QCatchSyscalls). A resume stops with Signaled{n} where
// the trace delivers signal n, unless n is passed, and at caught system
// calls. Signal numbers are Linux's (the session converts gdb's).
class Signals {
 public:
  virtual ~Signals() = default;
  // The signals a resume runs through without stopping (replaces the set).
  virtual void SetPassSignals(std::vector<int> signals) = 0;
  // The siginfo_t of the signal the last stop reported, as the kernel wrote
  // it; NotFound when the thread did not stop for a signal.
  virtual core::Expected<std::vector<std::uint8_t>> SignalInfo() = 0;
  // QCatchSyscalls: resumes stop at the entry and the return of these system
  // calls (empty: all of them); nullopt: none.
  virtual void CatchSyscalls(std::optional<std::vector<std::uint64_t>> numbers) = 0;
};

// vFile (gdb's host I/O): the files of the recorded process that a
// debugger reads from its target (`remote get`, `info proc`, /proc/PID/maps,
// the program and its libraries with sysroot "target:"). Read-only: the
// session refuses writes itself. Errors are gdb File-I/O errno values.
enum class HostIoError : int {
  kNoEntry = 2,      // ENOENT
  kBadFd = 9,        // EBADF
  kAccess = 13,      // EACCES
  kInvalid = 22,     // EINVAL
  kTooMany = 24,     // EMFILE
  kReadOnly = 30,    // EROFS
  kNameTooLong = 91  // ENAMETOOLONG
};

template <typename T>
using HostIoResult = std::variant<T, HostIoError>;

struct HostFileStat {
  std::uint32_t mode = 0;  // S_IFREG | 0444 for the served files
  std::uint64_t size = 0;
  std::uint32_t mtime = 0;
};

class HostFiles {
 public:
  virtual ~HostFiles() = default;
  // Opens `path` for reading; the descriptor is the client's (small, never
  // reused while open). kNoEntry / kAccess for paths outside the served set.
  virtual HostIoResult<int> Open(std::string_view path) = 0;
  // Up to out.size() bytes at `offset` (fewer at the end; 0 past it).
  virtual HostIoResult<std::size_t> Pread(int fd, std::uint64_t offset,
                                          std::span<std::uint8_t> out) = 0;
  virtual HostIoResult<HostFileStat> Fstat(int fd) = 0;
  virtual std::optional<HostIoError> Close(int fd) = 0;
  // The target of a served symbolic link (/proc/PID/exe, /proc/PID/cwd).
  virtual HostIoResult<std::string> Readlink(std::string_view path) = 0;
};

}  // namespace backstep::gdbstub
