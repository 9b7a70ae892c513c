// ArmedMoves: the TraceController of a TraceTarget (AsTraceController
// returns it): moves armed by the LLDB plugin or a monitor command (goto,
// reverse-stepi, reverse-finish, reverse-next) and the direction of the
// forward packets. An armed move waits for the next resume packet, which
// runs it as one move instead of its own, so the debugger sees one stop
// (LLDB 19 has no reverse commands; gdb gets the same landing position from a
// storm of `bs`, docs/protocol.md §7).
//
// The source-level moves follow gdb 13's rules (infrun.c, reverse stepping;
// ReverseNextPlan in backstep/gdbstub/trace_target.h): the debugger supplies
// the line rows, the stub the positions. Running them takes run control's
// steps, which the owning TraceTarget lends through MoveSteps.
//
// Contract: Run() disarms what it runs; a move that ends where it was meant
// to reports MoveDone (stop_reason.h). Breakpoints and watched accesses stop
// a move early, as they stop gdb.
//
// Thread-safety: one thread at a time (the owning TraceTarget's).
#pragma once

#include <atomic>
#include <optional>
#include <string>
#include <variant>

#include "backstep/core/expected.h"
#include "backstep/core/trace.h"
#include "backstep/gdbstub/stop_reason.h"
#include "backstep/gdbstub/trace_target.h"
#include "trace_target/served_position.h"
#include "trace_target/stop_points.h"

namespace backstep::gdbstub {

// The run control steps an armed move is made of (TraceTarget's).
class MoveSteps {
 public:
  virtual ~MoveSteps() = default;
  // One instruction of `thread` (nullopt: the current thread), as `s`/`bs`.
  virtual core::Expected<StopReason> Step(core::Direction direction,
                                          std::optional<core::ThreadId> thread) = 0;
  // Back to `to` (< position()), stopping earlier at breakpoints and
  // watched accesses; nullopt when `to` was reached.
  virtual core::Expected<std::optional<StopReason>> RunBackTo(
      core::Position to, const std::atomic<bool>* interrupt) = 0;
  // Moves to `p` and makes `thread` the stopping thread.
  virtual core::Status MoveTo(core::Position p, std::optional<core::ThreadId> thread) = 0;
  // The signal delivery to `thread` before `before` whose handler frame
  // holds its return address at `slot`; nullopt: none (or no signals).
  virtual core::Expected<std::optional<core::Position>> SignalFrameCall(core::Address slot,
                                                                        core::ThreadId thread,
                                                                        core::Position before) = 0;
};

class ArmedMoves final : public TraceController {
 public:
  // Every argument must outlive the object.
  ArmedMoves(const core::Trace& trace, ServedPosition& served, const StopPoints& stop_points,
             MoveSteps& steps)
      : trace_(trace), served_(served), stop_points_(stop_points), steps_(steps) {}

  // ---- TraceController (backstep/gdbstub/trace_target.h)
  core::Position position() const override { return served_.position(); }
  void ArmGoto(core::Position p) override;
  void ArmReverseStep() override { armed_ = ReverseStep{}; }
  core::Expected<core::Position> ArmReverseFinish(core::Address return_slot) override;
  core::Status ArmReverseNext(ReverseNextPlan plan) override;
  void SetDirection(core::Direction direction) override { direction_ = direction; }
  core::Direction direction() const override { return direction_; }

  // Runs and disarms the armed move for a resume of `thread` (nullopt: the
  // current thread); nullopt when nothing is armed.
  std::optional<core::Expected<StopReason>> Run(std::optional<core::ThreadId> thread,
                                                const std::atomic<bool>* interrupt);
  // What is armed, as `monitor info` shows it ("goto 5", "reverse-stepi");
  // empty when nothing is.
  std::string Describe() const;
  // vRun: nothing armed, direction forward.
  void Reset();

 private:
  struct Goto {
    core::Position position;
  };
  struct ReverseStep {};
  struct ReverseFinish {
    core::Position call;
  };
  struct ReverseNext {
    ReverseNextPlan plan;
  };
  using Armed = std::variant<std::monostate, Goto, ReverseStep, ReverseFinish, ReverseNext>;

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

  const core::Trace& trace_;
  ServedPosition& served_;
  const StopPoints& stop_points_;
  MoveSteps& steps_;
  Armed armed_;
  core::Direction direction_ = core::Direction::kForward;
};

}  // namespace backstep::gdbstub
