// TraceTarget: core::Trace + core::Cursor seen as a gdbstub::Target.
//
// The public face is backstep/gdbstub/trace_target.h (NewTraceTarget); this
// header is for the implementation files and the tests. TraceTarget answers
// the Target calls itself (registers, memory, threads, documents) and runs
// the resumes (run control; SignalStops says where signals stop them); every
// other capability is an object of its own, one file each as in packets/,
// all sharing one ServedPosition. The session talks to the capability it
// needs through Target's accessors:
//   trace_target.cc          registers, memory, threads, documents, Restart
//   trace_target_resume.cc   run control: steps and continues both ways
//   signal_stops.h           Signals: signal and system call stops, siginfo
//   exec_images.h            the images of a trace across execve
//   served_position.h        the position, the selected frame, the threads
//   stop_points.h            Breakpoints and Watchpoints (Z/z)
//   trace_frames.h           TraceFrames (QTFrame, tfind)
//   armed_moves.h            TraceController: goto, reverse-stepi/finish/next
//   monitor_table.h          MonitorCommands: the command table, and one
//                            file per family (monitor_status.cc, ...)
//   memory_map.h             MemoryMap (qMemoryRegionInfo)
//   process_files.h          HostFiles (vFile)
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

#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "backstep/core/cursor.h"
#include "backstep/core/mappings.h"
#include "backstep/core/search.h"
#include "backstep/core/trace.h"
#include "backstep/gdbstub/target.h"
#include "backstep/gdbstub/trace_target.h"
#include "trace_target/armed_moves.h"
#include "trace_target/exec_images.h"
#include "trace_target/memory_map.h"
#include "trace_target/monitor_table.h"
#include "trace_target/process_files.h"
#include "trace_target/served_position.h"
#include "trace_target/signal_stops.h"
#include "trace_target/stop_points.h"
#include "trace_target/trace_frames.h"

namespace backstep::gdbstub {

class TraceTarget final : public Target,
                          public ReverseExecution,
                          public RangeStepping,
                          private MoveSteps {
 public:
  static core::Expected<std::unique_ptr<TraceTarget>> Create(
      std::shared_ptr<const core::Trace> trace, TraceTargetOptions options);
  TraceTarget(const TraceTarget&) = delete;
  TraceTarget& operator=(const TraceTarget&) = delete;

  // ---- Target
  std::uint64_t pid() override { return options_.pid; }
  // From the architecture table: "<cpu>-pc-linux-gnu", its pointer size.
  const HostInfo* host_info() override { return &host_info_; }
  RegisterLayout register_layout() override;
  core::Expected<RegisterValue> ReadRegister(core::ThreadId thread, int regnum) override;
  std::size_t ReadMemory(core::Address addr, std::span<std::uint8_t> out) override;
  std::vector<ThreadInfo> Threads() override;
  core::ThreadId current_thread() override { return served_.current_thread(); }
  bool HasThread(core::ThreadId thread) override { return served_.HasThread(thread); }
  // Runs the armed move, if any; else moves in the armed direction.
  core::Expected<StopReason> Resume(ResumeKind kind, std::optional<core::ThreadId> thread,
                                    const std::atomic<bool>* interrupt) override;
  std::optional<std::string_view> TargetDescription(std::string_view annex) override;
  // The current image's (exec_images.h).
  std::span<const std::uint8_t> auxv() override { return images_.auxv(CurrentImage()); }
  std::string_view exec_file() override { return images_.exe_path(CurrentImage()); }
  // vRun: back to first_position(), nothing armed, no trace frame
  // selected, direction forward.
  core::Status Restart() override;

  // ---- The capabilities.
  ReverseExecution* reverse_execution() override { return this; }
  RangeStepping* range_stepping() override { return this; }
  Breakpoints* breakpoints() override { return &stop_points_; }
  Watchpoints* watchpoints() override { return &stop_points_; }
  TraceFrames* trace_frames() override { return &frames_; }
  MonitorCommands* monitor_commands() override { return &monitor_; }
  // Only for traces whose events may carry signals (TraceHeader).
  Signals* signals() override { return signal_stops_.active() ? &signal_stops_ : nullptr; }
  // Only traces that know some memory ranges have a map.
  MemoryMap* memory_map() override {
    return trace_->header().regions.empty() ? nullptr : &memory_map_;
  }
  HostFiles* host_files() override { return process_files_.get(); }

  // ---- ReverseExecution and RangeStepping (trace_target_resume.cc); an
  // armed move runs first, as for Resume.
  core::Expected<StopReason> ResumeBackward(ResumeKind kind, std::optional<core::ThreadId> thread,
                                            const std::atomic<bool>* interrupt) override;
  core::Expected<StopReason> RangeStep(core::Address start, core::Address end,
                                       std::optional<core::ThreadId> thread,
                                       const std::atomic<bool>* interrupt) override;

  // ---- What the capability objects share (and the tests look at).
  const core::Trace& trace() const { return *trace_; }
  const TraceTargetOptions& options() const { return options_; }
  ServedPosition& served() { return served_; }
  StopPoints& stop_points() { return stop_points_; }
  // The TraceController (AsTraceController returns it).
  ArmedMoves& armed_moves() { return armed_moves_; }
  ProcessMemoryMap& process_memory_map() { return memory_map_; }
  core::Position position() const { return served_.position(); }
  core::Position first_position() const { return served_.first(); }
  core::Position last_position() const { return served_.last(); }

 private:
  TraceTarget(std::shared_ptr<const core::Trace> trace, TraceTargetOptions options,
              std::unique_ptr<core::Cursor> cursor, core::Position first_position,
              core::Position last_position);

  // ---- Run control (trace_target_resume.cc)
  core::Expected<StopReason> Move(core::Direction direction, ResumeKind kind,
                                  std::optional<core::ThreadId> thread,
                                  const std::atomic<bool>* interrupt);
  // MoveSteps (armed_moves.h), also run control's own steps.
  core::Expected<StopReason> Step(core::Direction direction,
                                  std::optional<core::ThreadId> thread) override;
  core::Expected<std::optional<StopReason>> RunBackTo(core::Position to,
                                                      const std::atomic<bool>* interrupt) override;
  core::Status MoveTo(core::Position p, std::optional<core::ThreadId> thread) override;
  core::Expected<std::optional<core::Position>> SignalFrameCall(core::Address slot,
                                                                core::ThreadId thread,
                                                                core::Position before) override;
  // `event` (an event of `thread`), or the latest event of `thread` before
  // it at whose position the thread's pc is known (not the event that
  // creates the thread); nullopt if none. Leaves the cursor where it was.
  core::Expected<std::optional<std::uint64_t>> PrevEventWithPc(core::ThreadId thread,
                                                               std::uint64_t event);
  core::Expected<StopReason> Continue(core::Direction direction,
                                      const std::atomic<bool>* interrupt);
  core::StopCondition Condition(const std::atomic<bool>* interrupt) const;
  StopReason ToStopReason(const core::StopEvent& stop) const;

  // Moves to `slot` (SignalStops) and reports it.
  core::Expected<StopReason> StopAt(const SignalStops::Slot& slot);
  // The image at the position (0 until the first exec).
  std::size_t CurrentImage() {
    return position() <= first_position() ? 0 : images_.ImageAt(position());
  }
  // The exec a step of `event` (executed forward, undone backward) makes,
  // as its stop reason, if the event is an exec.
  core::Expected<std::optional<StopReason>> ExecStep(core::Direction direction,
                                                     std::uint64_t event);
  // The stop reply of crossing `exec` in `direction`: the path of the image
  // now current.
  StopReason ExecReason(core::Direction direction, const SignalStops::ExecPoint& exec);

  std::shared_ptr<const core::Trace> trace_;
  TraceTargetOptions options_;
  ServedPosition served_;
  StopPoints stop_points_;
  SignalStops signal_stops_;
  ExecImages images_;
  ArmedMoves armed_moves_;
  TraceFrameIndex frames_;
  MonitorTable monitor_;
  ProcessMemoryMap memory_map_;
  std::unique_ptr<ProcessFiles> process_files_;

  // Registers: slots_[regnum] says where regnum lives.
  std::vector<core::GdbSlot> slots_;
  std::vector<int> expedited_;  // regnums sent in every stop reply
  std::vector<int> frame_;      // fp, sp, pc: the stop reply's registers for gdb
  std::optional<int> pc_regnum_;
  std::vector<std::pair<std::string, std::string>> documents_;
  std::string triple_;
  HostInfo host_info_;
  std::vector<std::uint8_t> known_;  // ReadMemory scratch
};

}  // namespace backstep::gdbstub
