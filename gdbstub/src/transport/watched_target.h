// WatchedTarget: a Target decorator that lets a connection keep reading its
// client while a continue is being computed.
//
// Steps and every other request run inline on the connection's thread (they
// are bounded: an index lookup plus a replay within one keyframe interval),
// so `bs` + `g` + `m` cost one thread wake-up each. A continue (`c`, `bc`,
// vCont with `c`) may scan: the decorator hands it to the ResumeWatcher,
// which runs it on a helper thread while the connection thread watches the
// client for 0x03 and turns it into Session::RequestInterrupt() (docs/protocol.md
// §6.8). Every capability other than reverse execution is the inner
// target's own object.
//
// Thread-safety: as Target. The inner target is called by one thread at a
// time (the helper runs only while the connection thread waits for it).
#pragma once

#include <functional>

#include "backstep/gdbstub/target.h"

namespace backstep::gdbstub {

class ResumeWatcher {
 public:
  virtual ~ResumeWatcher() = default;
  // Runs `resume` on another thread and returns its result; meanwhile the
  // calling thread watches the client for interrupts.
  virtual core::Expected<StopReason> RunWatched(
      const std::function<core::Expected<StopReason>()>& resume) = 0;
};

class WatchedTarget final : public Target, public ReverseExecution, public RangeStepping {
 public:
  // `inner` and `watcher` must outlive the decorator.
  WatchedTarget(Target& inner, ResumeWatcher& watcher) : inner_(inner), watcher_(watcher) {}

  std::uint64_t pid() override { return inner_.pid(); }
  const HostInfo* host_info() override { return inner_.host_info(); }
  RegisterLayout register_layout() override { return inner_.register_layout(); }
  core::Expected<RegisterValue> ReadRegister(core::ThreadId thread, int regnum) override {
    return inner_.ReadRegister(thread, regnum);
  }
  std::size_t ReadMemory(core::Address addr, std::span<std::uint8_t> out) override {
    return inner_.ReadMemory(addr, out);
  }
  std::vector<ThreadInfo> Threads() override { return inner_.Threads(); }
  core::ThreadId current_thread() override { return inner_.current_thread(); }
  bool HasThread(core::ThreadId thread) override { return inner_.HasThread(thread); }
  std::optional<std::string_view> TargetDescription(std::string_view annex) override {
    return inner_.TargetDescription(annex);
  }
  std::span<const std::uint8_t> auxv() override { return inner_.auxv(); }
  std::string_view exec_file() override { return inner_.exec_file(); }

  core::Expected<StopReason> Resume(ResumeKind kind, std::optional<core::ThreadId> thread,
                                    const std::atomic<bool>* interrupt) override;
  core::Expected<StopReason> ResumeBackward(ResumeKind kind, std::optional<core::ThreadId> thread,
                                            const std::atomic<bool>* interrupt) override;

  ReverseExecution* reverse_execution() override {
    return inner_.reverse_execution() ? this : nullptr;
  }
  // A range step may run long (a loop within one line): watched too.
  core::Expected<StopReason> RangeStep(core::Address start, core::Address end,
                                       std::optional<core::ThreadId> thread,
                                       const std::atomic<bool>* interrupt) override;
  RangeStepping* range_stepping() override { return inner_.range_stepping() ? this : nullptr; }
  Breakpoints* breakpoints() override { return inner_.breakpoints(); }
  Watchpoints* watchpoints() override { return inner_.watchpoints(); }
  TraceFrames* trace_frames() override { return inner_.trace_frames(); }
  MonitorCommands* monitor_commands() override { return inner_.monitor_commands(); }
  MemoryMap* memory_map() override { return inner_.memory_map(); }
  Signals* signals() override { return inner_.signals(); }
  HostFiles* host_files() override { return inner_.host_files(); }
  core::Status Restart() override { return inner_.Restart(); }

 private:
  Target& inner_;
  ResumeWatcher& watcher_;
};

}  // namespace backstep::gdbstub
