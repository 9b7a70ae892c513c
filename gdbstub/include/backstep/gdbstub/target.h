// Target: what the GDB stub debugs, seen through the session's eyes.
//
// The session (one per client) translates packets into calls on a Target and
// Target results into replies; it knows nothing of traces. The adapter over
// core's cursor (TraceTarget, issue "backstep serve") implements this for a
// recorded trace; tests use a small in-memory fake.
//
// Model: the target is stopped at a *current position*. Registers and memory
// are read at that position (or at the selected trace frame, see
// TraceFrames::SelectFrame). Resumes move the position and return why they
// stopped. Every register byte and memory byte is either known or unknown:
// unknown register bytes go to the client as `xx`, unknown memory ends a read.
//
// Thread ids are the target's own, >= 1 and < 2^63 (0 and -1 mean "any" and
// "all" on the wire). The pid is non-zero (LLDB rejects pid 0).
//
// Optional capabilities are nullable accessors (capabilities.h); qSupported
// advertises exactly the ones that return non-null. The session calls
// accessors each time it needs them, so they may not change while a client
// is connected.
//
// Thread-safety: the session calls a Target from one thread at a time. The
// `interrupt` flag passed to resumes is set from another thread.
#pragma once

#include <algorithm>
#include <array>
#include <atomic>
#include <cassert>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "backstep/core/expected.h"
#include "backstep/core/types.h"
#include "backstep/gdbstub/capabilities.h"
#include "backstep/gdbstub/stop_reason.h"

namespace backstep::gdbstub {

// One register's value in target byte order, with a known-mask per byte.
struct RegisterValue {
  static constexpr std::size_t kMaxSize = 64;  // largest gdb register piece (zmmNh: 32)
  std::uint16_t size = 0;                      // bytes, <= kMaxSize
  std::array<std::uint8_t, kMaxSize> bytes{};
  std::uint64_t known = 0;  // bit i set: bytes[i] is known

  bool all_known() const {
    return size == kMaxSize ? known == ~std::uint64_t{0} : known == (std::uint64_t{1} << size) - 1;
  }
  // A fully known value. REQUIRES: value.size() <= kMaxSize.
  static RegisterValue Known(std::span<const std::uint8_t> value) {
    assert(value.size() <= kMaxSize);
    RegisterValue v;
    v.size = static_cast<std::uint16_t>(value.size());
    std::copy(value.begin(), value.end(), v.bytes.begin());
    v.known = v.size == kMaxSize ? ~std::uint64_t{0} : (std::uint64_t{1} << v.size) - 1;
    return v;
  }
  // A value of `size` unknown bytes. REQUIRES: size <= kMaxSize.
  static RegisterValue Unknown(std::uint16_t size) {
    assert(size <= kMaxSize);
    RegisterValue v;
    v.size = size;
    return v;
  }
};

// Which gdb register numbers exist.
struct RegisterLayout {
  int count = 0;                   // regnums 0..count-1, in `g` block order (= tdesc order)
  std::optional<int> pc;           // the PC's regnum (thread-pcs: in stop replies)
  std::span<const int> expedited;  // sent in every stop reply, e.g. {6, 7, 16} on amd64
  // The frame pointer, stack pointer and pc (amd64: {6, 7, 16}): all gdb
  // needs after a stop to compute the frame. Empty: `expedited` is sent to
  // every client.
  std::span<const int> frame;
};

struct ThreadInfo {
  core::ThreadId id;
  std::string name;  // may be empty
  std::optional<unsigned> core;
};

// qHostInfo / qProcessInfo (LLDB). Without it both answer "".
struct HostInfo {
  std::string_view triple;  // "x86_64-pc-linux-gnu"
  unsigned pointer_size = 8;
  std::string_view os_type;  // "linux"
  bool little_endian = true;
  bool watchpoints_trap_after = true;  // x86: the PC is after the writing instruction
};

class Target {
 public:
  virtual ~Target() = default;

  // ---- Identity
  virtual std::uint64_t pid() { return 1; }
  // The view lives as long as the target. nullptr: qHostInfo/qProcessInfo -> "".
  virtual const HostInfo* host_info() { return nullptr; }

  // ---- Registers. Reads are O(1) at any position (LLDB reads with one `p`
  // per register, gdb with one `g` after every `bs`).
  virtual RegisterLayout register_layout() = 0;
  // kNotFound for an unknown thread or regnum; other errors become `E` replies.
  virtual core::Expected<RegisterValue> ReadRegister(core::ThreadId thread, int regnum) = 0;

  // ---- Memory (one address space for all threads).
  // Fills the longest readable prefix of `out` with the bytes at `addr` and
  // returns its length (0: the first byte is unknown or unmapped).
  virtual std::size_t ReadMemory(core::Address addr, std::span<std::uint8_t> out) = 0;

  // ---- Threads at the current position.
  virtual std::vector<ThreadInfo> Threads() = 0;
  // The thread that stopped (every stop reply's `thread:`).
  virtual core::ThreadId current_thread() = 0;
  // Whether `thread` exists at the current position. Called for every
  // register read that names a thread: override when Threads() is not cheap.
  virtual bool HasThread(core::ThreadId thread) {
    for (const ThreadInfo& info : Threads()) {
      if (info.id == thread) return true;
    }
    return false;
  }

  // ---- Execution (forward). One instruction of `thread` (any thread when
  // nullopt) for kStep; to the closest later breakpoint or watchpoint for
  // kContinue (docs/protocol.md §6). At the end of the trace the position stays and the
  // reason is HistoryEdge{kEnd}. Polls `*interrupt` (when non-null) and
  // returns Interrupted once it is set. Errors become `E` replies.
  virtual core::Expected<StopReason> Resume(ResumeKind kind, std::optional<core::ThreadId> thread,
                                            const std::atomic<bool>* interrupt) = 0;

  // ---- Documents. The views live as long as the target.
  // The target description: "target.xml" and the documents it includes.
  // nullopt: no such annex.
  virtual std::optional<std::string_view> TargetDescription(std::string_view annex) = 0;
  // The recorded auxiliary vector; empty: none (qXfer:auxv:read not advertised).
  virtual std::span<const std::uint8_t> auxv() { return {}; }
  // The executable's path on the client's machine (qXfer:exec-file:read);
  // empty: unknown (not advertised).
  virtual std::string_view exec_file() { return {}; }

  // ---- Extended mode (vRun, R): back to where the target started, as a
  // fresh run would be. Unsupported: the target cannot restart.
  virtual core::Status Restart() { return core::Status::Unsupported("restart"); }

  // ---- Optional capabilities (capabilities.h); nullptr when absent.
  virtual ReverseExecution* reverse_execution() { return nullptr; }
  virtual RangeStepping* range_stepping() { return nullptr; }
  virtual Breakpoints* breakpoints() { return nullptr; }
  virtual Watchpoints* watchpoints() { return nullptr; }
  virtual TraceFrames* trace_frames() { return nullptr; }
  virtual MonitorCommands* monitor_commands() { return nullptr; }
  virtual MemoryMap* memory_map() { return nullptr; }
  virtual Signals* signals() { return nullptr; }
  virtual HostFiles* host_files() { return nullptr; }
};

}  // namespace backstep::gdbstub
