// TraceTarget: core::Trace + core::Cursor seen as a gdbstub::Target.
//
// The public face is backstep/gdbstub/trace_target.h (NewTraceTarget); this
// header is for the implementation files and the tests:
//   trace_target.cc          registers, memory, threads, documents, capabilities
//   trace_target_resume.cc   steps and continues both ways, armed moves
//   trace_target_frames.cc   QTFrame (tfind)
//   trace_target_monitor.cc  monitor commands
//   trace_target_process.cc  the memory map and host files (ProcessFiles)
//   stop_points.h            breakpoint and watchpoint bookkeeping (StopPoints)
//   trace_target_armed_moves.cc  reverse-finish and reverse-next armed moves
//   trace_target_signals.cc  signal deliveries: stops, QPassSignals, siginfo
//
// Positions and threads (docs/protocol.md §6): the cursor's position is a state
// index. A step of thread T from p executes T's next event e (the first event
// of T at or after p) and stops where T is about to run its following event
// (or at e + 1 when T has no more events); a reverse step of T from p stops at
// T's previous event (the last event of T before p). In a single-thread
// trace both are p + 1 and p - 1. "Any thread" means the current thread.
// After a stop, current_thread() is the thread that stopped (the stepped
// thread, the breakpoint's thread, the watched write's thread) while it
// exists at the position; otherwise the thread of the next event.
//
// Thread-safety: one thread at a time (gdbstub::Target).
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include "backstep/core/cursor.h"
#include "backstep/core/mappings.h"
#include "backstep/core/search.h"
#include "backstep/core/trace.h"
#include "backstep/gdbstub/target.h"
#include "backstep/gdbstub/trace_target.h"
#include "trace_target/process_files.h"
#include "trace_target/stop_points.h"

namespace backstep::gdbstub {

class TraceTarget final : public Target,
                          public TraceController,
                          public ReverseExecution,
                          public RangeStepping,
                          public Breakpoints,
                          public Watchpoints,
                          public TraceFrames,
                          public MonitorCommands,
                          public Signals,
                          public MemoryMap {
 public:
  static core::Expected<std::unique_ptr<TraceTarget>> Create(
      std::shared_ptr<const core::Trace> trace, TraceTargetOptions options);

  // ---- Target
  std::uint64_t pid() override { return options_.pid; }
  // From the architecture table: "<cpu>-pc-linux-gnu", its pointer size.
  const HostInfo* host_info() override { return &host_info_; }
  RegisterLayout register_layout() override;
  core::Expected<RegisterValue> ReadRegister(core::ThreadId thread, int regnum) override;
  std::size_t ReadMemory(core::Address addr, std::span<std::uint8_t> out) override;
  std::vector<ThreadInfo> Threads() override;
  core::ThreadId current_thread() override;
  bool HasThread(core::ThreadId thread) override;
  core::Expected<StopReason> Resume(ResumeKind kind, std::optional<core::ThreadId> thread,
                                    const std::atomic<bool>* interrupt) override;
  std::optional<std::string_view> TargetDescription(std::string_view annex) override;
  std::span<const std::uint8_t> auxv() override { return options_.auxv; }
  std::string_view exec_file() override { return options_.exe_path; }
  ReverseExecution* reverse_execution() override { return this; }
  RangeStepping* range_stepping() override { return this; }
  Breakpoints* breakpoints() override { return this; }
  Watchpoints* watchpoints() override { return this; }
  TraceFrames* trace_frames() override { return this; }
  MonitorCommands* monitor_commands() override { return this; }
  // Only for traces whose events may carry signals (TraceHeader).
  Signals* signals() override;
  // Only traces that know some memory ranges have a map.
  MemoryMap* memory_map() override { return trace_->header().regions.empty() ? nullptr : this; }
  HostFiles* host_files() override { return process_files_.get(); }

  // ---- TraceController
  core::Position position() const override { return cursor_->position(); }
  void ArmGoto(core::Position p) override;
  void ArmReverseStep() override { armed_ = ArmedReverseStep{}; }
  core::Expected<core::Position> ArmReverseFinish(core::Address return_slot) override;
  core::Status ArmReverseNext(ReverseNextPlan plan) override;
  void SetDirection(core::Direction direction) override { direction_ = direction; }
  core::Direction direction() const override { return direction_; }

  // ---- ReverseExecution
  // RangeStepping (trace_target_resume.cc).
  core::Expected<StopReason> RangeStep(core::Address start, core::Address end,
                                       std::optional<core::ThreadId> thread,
                                       const std::atomic<bool>* interrupt) override;
  core::Expected<StopReason> ResumeBackward(ResumeKind kind, std::optional<core::ThreadId> thread,
                                            const std::atomic<bool>* interrupt) override;

  // ---- Breakpoints (software and hardware behave alike on a recording)
  core::Status InsertBreakpoint(BreakpointType type, core::Address addr,
                                std::uint64_t kind) override;
  core::Status RemoveBreakpoint(BreakpointType type, core::Address addr,
                                std::uint64_t kind) override;

  // ---- Watchpoints (read and access kinds only when the trace records reads)
  bool Supports(WatchKind kind) const override;
  core::Status InsertWatchpoint(WatchKind kind, core::Address addr, std::uint64_t length) override;
  core::Status RemoveWatchpoint(WatchKind kind, core::Address addr, std::uint64_t length) override;

  // ---- TraceFrames (trace_target_frames.cc)
  std::uint64_t frame_count() override;
  std::optional<TraceFrameHit> FindFrame(const TraceFrameQuery& query,
                                         std::optional<std::uint32_t> current) override;
  core::Status SelectFrame(std::optional<std::uint32_t> frame) override;
  const core::TracepointDefinitions* tracepoint_definitions() override;
  std::optional<std::int64_t> TraceVariable(std::int32_t number) override;
  std::optional<std::string> TraceframeInfo() override;

  // ---- MonitorCommands (trace_target_monitor.cc)
  core::Expected<std::string> RunMonitorCommand(std::string_view command) override;

  // ---- Signals (trace_target_signals.cc). Stop slots, in trace order: at
  // position p, the return of the system call event p - 1 made, then the
  // delivery of a signal at event p (the signal is pending, the handler has
  // not run), then the entry of the system call event p makes. Forward, a
  // continue stops at the first slot after the last stop (after a plain stop
  // at p: an entry at p still comes); backward at the first slot before it
  // (after a plain stop at p: before p), as gdb's `record full` does. A step
  // reports the delivery it lands on. At the end of a trace that records the
  // process's end, a forward continue from the last position replies
  // Exited/Terminated (a second continue: the first stops at the end of the
  // history, from where reverse commands still work).
  void SetPassSignals(std::vector<int> signals) override { pass_signals_ = std::move(signals); }
  // The recorded siginfo_t of the delivery; when the trace has none, 128
  // bytes holding only si_signo.
  core::Expected<std::vector<std::uint8_t>> SignalInfo() override;
  void CatchSyscalls(std::optional<std::vector<std::uint64_t>> numbers) override {
    catch_syscalls_ = std::move(numbers);
  }
  // ---- MemoryMap (trace_target_process.cc): the mappings at the position
  // (core::MappingTimeline); permissions a format does not record read rwx.
  MemoryRegion RegionAt(core::Address addr) override;
  // vRun (trace_target_process.cc): back to first_position(), nothing
  // armed, no trace frame selected, direction forward.
  core::Status Restart() override;

  const core::Trace& trace() const { return *trace_; }
  // The first position whose pc is known: where the target starts and the
  // beginning of the history it serves (see backstep/gdbstub/trace_target.h).
  core::Position first_position() const { return first_position_; }
  // The last position whose pc is known: where the served history ends.
  core::Position last_position() const { return last_position_; }
  bool watch_only_changes() const { return options_.watch_only_changes; }

 private:
  struct ArmedGoto {
    core::Position position;
  };
  struct ArmedReverseStep {};
  struct ArmedReverseFinish {
    core::Position call;
  };
  struct ArmedReverseNext {
    ReverseNextPlan plan;
  };
  using Armed = std::variant<std::monostate, ArmedGoto, ArmedReverseStep, ArmedReverseFinish,
                             ArmedReverseNext>;
  using MonitorArgs = std::vector<std::string_view>;

  TraceTarget(std::shared_ptr<const core::Trace> trace, TraceTargetOptions options,
              std::unique_ptr<core::Cursor> cursor, core::Position first_position,
              core::Position last_position);

  // The cursor reads answer from: the selected frame's, else the current one.
  core::Cursor& view() { return frame_cursor_active_ ? *frame_cursor_ : *cursor_; }
  // view()'s threads, sorted; cached per cursor and position (HasThread runs
  // for every register packet).
  const std::vector<core::ThreadId>& ThreadsHere();

  // ---- trace_target_resume.cc
  core::Expected<StopReason> Move(core::Direction direction, ResumeKind kind,
                                  std::optional<core::ThreadId> thread,
                                  const std::atomic<bool>* interrupt);
  // The armed move, if any, for a resume of `thread` (nullopt: any).
  std::optional<core::Expected<StopReason>> RunArmedMove(std::optional<core::ThreadId> thread,
                                                         const std::atomic<bool>* interrupt);
  core::Expected<StopReason> Step(core::Direction direction, std::optional<core::ThreadId> thread);
  // `event` (an event of `thread`), or the latest event of `thread` before
  // it at whose position the thread's pc is known (not the event that
  // creates the thread); nullopt if none. Leaves the cursor where it was.
  core::Expected<std::optional<std::uint64_t>> PrevEventWithPc(core::ThreadId thread,
                                                               std::uint64_t event);
  core::Expected<StopReason> Continue(core::Direction direction,
                                      const std::atomic<bool>* interrupt);
  core::StopCondition Condition(const std::atomic<bool>* interrupt) const;
  // ---- trace_target_armed_moves.cc
  // `resumed`: the thread the client resumed (nullopt: the current one).
  core::Expected<StopReason> RunReverseFinish(core::Position call,
                                              std::optional<core::ThreadId> resumed,
                                              const std::atomic<bool>* interrupt);
  core::Expected<StopReason> RunReverseNext(const ReverseNextPlan& plan,
                                            std::optional<core::ThreadId> resumed,
                                            const std::atomic<bool>* interrupt);
  // The position of the `call` that stored `return_address` at `slot`
  // before `before`; nullopt if none is found.
  core::Expected<std::optional<core::Position>> FindCall(core::Address slot,
                                                         core::Address return_address,
                                                         core::Position before);
  // Back to `to` (< position()), stopping earlier at breakpoints and
  // watched accesses; nullopt when `to` was reached.
  core::Expected<std::optional<StopReason>> RunBackTo(core::Position to,
                                                      const std::atomic<bool>* interrupt);
  // Moves the cursor to `p` and makes `thread` the stopping thread.
  core::Status MoveTo(core::Position p, std::optional<core::ThreadId> thread);
  StopReason ToStopReason(const core::StopEvent& stop) const;

  // ---- trace_target_signals.cc
  struct Slot {
    enum Kind : unsigned char { kReturn = 0, kSignal = 1, kEntry = 2 };
    std::uint64_t key = 0;  // 3 * position + kind
    Kind kind = kSignal;
    std::uint64_t number = 0;  // signal or system call
    core::ThreadId thread;
    std::uint64_t position() const { return key / 3; }
  };
  struct Ending {
    bool scanned = false;
    std::vector<Slot> slots;  // by key
    int exit_status = -1;     // of the last event that exits
    int killed_by = 0;        // the signal of the final marker
    bool exits = false;       // the last event is the process's end
  };
  // The slots of the trace (one pass over the events, the first time).
  core::Expected<const Ending*> Scan();
  // Whether a resume stops at `slot` (signals not passed, caught system calls).
  bool Stops(const Slot& slot) const;
  // The slot a continue from position() meets before `stop`, if any.
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
  // Moves to the slot and reports it.
  core::Expected<StopReason> StopAt(const Slot& slot);
  // Exited/Terminated when a forward continue starts at the end of a trace
  // that records the process's end.
  core::Expected<std::optional<StopReason>> EndOfProcess();

  // ---- trace_target_frames.cc
  bool frames_are_events() const;  // tfile: frame n = position n + 1
  std::uint64_t FramePosition(std::uint32_t frame) const;
  std::uint32_t TracepointOf(std::uint32_t frame);
  // First frame >= first whose pc is in [lo, hi] (frame_cursor_ must exist;
  // moves it).
  std::optional<std::uint32_t> NextFrameWithPc(core::Address lo, core::Address hi,
                                               std::uint64_t first);
  std::optional<std::uint32_t> NextTfileFrameWithPc(core::Address lo, core::Address hi,
                                                    std::uint64_t first);
  // Whether the pc of the thread that executes event `position` (at the end:
  // the last thread) lies in [lo, hi] at that position. Moves frame_cursor_.
  bool PcOfPositionIn(std::uint64_t position, core::Address lo, core::Address hi);
  // Calls visit(event) with the event of the tfile frame at position `at`;
  // false if there is none (not a tfile, position 0, a read error).
  template <typename Visit>
  bool VisitFrameEvent(core::Position at, Visit visit);

  // ---- trace_target_monitor.cc
  core::Expected<std::string> MonitorHelp(const MonitorArgs& args);
  core::Expected<std::string> MonitorInfo(const MonitorArgs& args);
  // `monitor info mem` (trace_target_process.cc).
  core::Expected<std::string> MonitorInfoMem();
  core::Expected<std::string> MonitorWhen(const MonitorArgs& args);
  core::Expected<std::string> MonitorGoto(const MonitorArgs& args);
  core::Expected<std::string> MonitorReverseStepi(const MonitorArgs& args);
  core::Expected<std::string> MonitorDirection(const MonitorArgs& args);
  core::Expected<std::string> MonitorLastWrite(const MonitorArgs& args);
  core::Expected<std::string> MonitorNextWrite(const MonitorArgs& args);
  core::Expected<std::string> MonitorHistory(const MonitorArgs& args);
  core::Expected<std::string> MonitorSystemRegisters(const MonitorArgs& args);
  core::Expected<std::string> MonitorWatchFilter(const MonitorArgs& args);
  core::Expected<std::string> MonitorOrigin(const MonitorArgs& args);
  core::Expected<std::string> MonitorReverseFinish(const MonitorArgs& args);
  core::Expected<std::string> MonitorReverseNext(const MonitorArgs& args);
  struct MonitorCommand {
    std::string_view name;
    std::string_view usage;
    std::string_view help;
    core::Expected<std::string> (TraceTarget::*run)(const MonitorArgs& args);
  };
  static const MonitorCommand kMonitorCommands[];

  std::shared_ptr<const core::Trace> trace_;
  TraceTargetOptions options_;
  std::unique_ptr<core::Cursor> cursor_;
  core::Position first_position_;               // history begins here for the client
  core::Position last_position_;                // and ends here
  std::unique_ptr<core::Cursor> frame_cursor_;  // created by the first SelectFrame
  bool frame_cursor_active_ = false;
  core::Position selected_position_;  // of frame_cursor_ while active
  std::optional<core::ThreadId> stop_thread_;

  // Registers: slot_of_[regnum] indexes slots_.
  std::vector<core::GdbSlot> slots_;
  std::vector<int> expedited_;  // regnums sent in every stop reply
  std::optional<int> pc_regnum_;
  std::vector<std::pair<std::string, std::string>> documents_;
  std::string triple_;
  HostInfo host_info_;
  std::vector<std::uint8_t> known_;  // ReadMemory scratch
  std::vector<core::ThreadId> threads_;
  const core::Cursor* threads_cursor_ = nullptr;
  core::Position threads_position_;

  std::unique_ptr<core::MappingTimeline> mappings_;
  std::unique_ptr<ProcessFiles> process_files_;

  StopPoints stop_points_;
  Ending ending_;
  std::vector<int> pass_signals_;
  std::optional<std::vector<std::uint64_t>> catch_syscalls_;
  std::optional<Slot> stop_slot_;  // of the last stop, when it was a slot
  Armed armed_;
  core::Direction direction_ = core::Direction::kForward;
};

}  // namespace backstep::gdbstub
