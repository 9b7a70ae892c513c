// SignalStops: the Signals capability of a TraceTarget (QPassSignals,
// QCatchSyscalls, qXfer:siginfo:read), and where run control stops for the
// signal deliveries and system calls a trace records, and for the end of the
// process.
//
// Stop slots, in trace order: at position p, the return of the system call
// event p - 1 made, then the delivery of a signal at event p (the signal is
// pending, the handler has not run), then the entry of the system call
// event p makes. Forward, a continue stops at the first slot after the last
// stop (after a plain stop at p: an entry at p still comes); backward at the
// first slot before it (after a plain stop at p: before p), as gdb's `record
// full` does. A step reports the delivery it lands on. At the end of a trace
// that records the process's end, a forward continue from the last position
// replies Exited/Terminated (a second continue: the first stops at the end of
// the history, from where reverse commands still work).
//
// The slots come from the events' notes (core/include/backstep/core/event_notes.h),
// read the first time a resume needs them from the index's list of noted
// events (core::Trace::noted_events(): no decoding), or, for an index
// without that list, in one pass over the events. With the index, the plain
// system calls (core::Trace::plain_syscalls()) are not kept as slots: a
// resume that catches system calls searches the index's stream from the
// current position, a block of calls at a time. Only traces whose events
// may carry notes have the capability (active()).
//
// Thread-safety: one thread at a time (the owning TraceTarget's).
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "backstep/core/event_notes.h"
#include "backstep/core/expected.h"
#include "backstep/core/plain_syscalls.h"
#include "backstep/core/search.h"
#include "backstep/core/trace.h"
#include "backstep/gdbstub/capabilities.h"
#include "backstep/gdbstub/stop_reason.h"
#include "trace_target/served_position.h"

namespace backstep::gdbstub {

class SignalStops final : public Signals {
 public:
  struct Slot {
    enum Kind : unsigned char { kReturn = 0, kSignal = 1, kEntry = 2 };
    std::uint64_t key = 0;  // 3 * position + kind
    Kind kind = kSignal;
    std::uint64_t number = 0;  // signal or system call
    core::ThreadId thread;
    std::uint64_t position() const { return key / 3; }
  };

  // Both must outlive the object.
  SignalStops(const core::Trace& trace, ServedPosition& served) : trace_(trace), served_(served) {}

  // Whether the trace's events may carry signals (TraceHeader).
  bool active() const;

  // ---- Signals
  void SetPassSignals(std::vector<int> signals) override { pass_signals_ = std::move(signals); }
  // The recorded siginfo_t of the delivery; when the trace has none, 128
  // bytes holding only si_signo.
  core::Expected<std::vector<std::uint8_t>> SignalInfo() override;
  void CatchSyscalls(std::optional<std::vector<std::uint64_t>> numbers) override {
    catch_syscalls_ = std::move(numbers);
  }

  // ---- For run control (REQUIRES: active()).
  // The slot a continue from the current position meets before `stop`, if any.
  core::Expected<std::optional<Slot>> SlotBefore(core::Direction direction,
                                                 const core::StopEvent& stop);
  // The stopping delivery of `thread` at position `position`, if any.
  core::Expected<std::optional<Slot>> DeliveryAt(std::uint64_t position, core::ThreadId thread);
  // The last signal delivery of `thread` before `before` that put the
  // handler's return address at `slot` (sp == slot at the handler's first
  // instruction), if any among the last few deliveries.
  core::Expected<std::optional<core::Position>> DeliveryWithFrameAt(core::Address slot,
                                                                    core::ThreadId thread,
                                                                    core::Position before);
  // Exited/Terminated when a forward continue starts at the end of a trace
  // that records the process's end.
  core::Expected<std::optional<StopReason>> EndOfProcess();
  // Run control stopped at `slot` (the position is the slot's): remembers
  // it (for SignalInfo and the next continue) and returns its stop reply.
  StopReason StoppedAt(const Slot& slot);
  // Run control stopped elsewhere.
  void ClearStop() { stop_slot_.reset(); }

  // An event that replaces the process's image (execve): the state after
  // it, position event + 1, is the new image's first.
  struct ExecPoint {
    std::uint64_t event = 0;
    core::ThreadId thread;
    std::string path;  // the new executable
  };
  // Every exec of the trace, in trace order (from the same pass).
  core::Expected<const std::vector<ExecPoint>*> Execs();

 private:
  struct Ending {
    bool scanned = false;
    std::vector<Slot> slots;  // by key
    int exit_status = -1;     // of the last event that exits
    int killed_by = 0;        // the signal of the final marker
    bool exits = false;       // the last event is the process's end
    std::vector<ExecPoint> execs;
  };
  // The slots of the trace (the first time: from the index's list, or one
  // pass over the events).
  core::Expected<const Ending*> Scan();
  // Adds the slots and execs of event `n`'s notes to `found`.
  static void Note(std::uint64_t n, core::ThreadId thread, core::EventNotes notes, Ending* found);
  // Whether a resume stops at `slot` (signals not passed, caught system calls).
  bool Stops(const Slot& slot) const;
  // The first / last slot of a plain system call (not in Ending::slots: the
  // index's stream) with key in (after, last] / [first, before) at which a
  // resume stops, if any. Only when system calls are caught.
  std::optional<Slot> NextPlainSlot(std::uint64_t after, std::uint64_t last);
  std::optional<Slot> PrevPlainSlot(std::uint64_t before, std::uint64_t first);
  // Block b of the stream, decoded (the last one is kept).
  const std::vector<core::PlainSyscall>& PlainBlock(std::uint64_t b);
  // A plain call's entry and return slots.
  static std::array<Slot, 2> PlainSlots(const core::PlainSyscall& call);

  const core::Trace& trace_;
  ServedPosition& served_;
  Ending ending_;
  std::vector<int> pass_signals_;
  std::optional<std::vector<std::uint64_t>> catch_syscalls_;
  std::optional<Slot> stop_slot_;  // of the last stop, when it was a slot
  // The index's plain system calls (set by Scan when it reads the index's
  // list; the slots of a decoding pass include every call).
  std::optional<core::PlainSyscalls> plain_;
  std::vector<core::PlainSyscall> plain_block_;
  std::uint64_t plain_block_index_ = ~std::uint64_t(0);
};

}  // namespace backstep::gdbstub
