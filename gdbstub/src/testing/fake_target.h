// FakeTarget: a small in-memory Target for session tests and the fuzzer.
//
// A "trace" of `pcs.size()` positions (default 10) with one thread per
// position, fixed memory chunks, and every optional capability, each of which
// can be switched off through `caps`. Resumes follow docs/protocol.md §6 in the
// simplest way (linear scans, polling the interrupt flag at every position).
//
// Registers (amd64 numbering, 18 registers, 16*8 + 8 + 4 = 140-byte `g`):
//   0..14  8 bytes, value regnum + 1       (rbp = 6 -> 7, rsp = 7 -> 8)
//   15     8 bytes, unknown                (`xxxxxxxxxxxxxxxx`)
//   16     rip = pcs[position]
//   17     eflags, 4 bytes, 0x246
// Expedited: 6, 7, 16. Memory: 0x400000..0x400fff (bytes i & 0xff) and
// 0x404000..0x40400f (zeros). Instruction 3 writes [0x404000, 0x404008).
//
// Monitor commands: `info` ("position N\n"), `quiet` (no output), `many` (100
// x's), `echo TEXT`; anything else fails with kInvalidArgument.
//
// Thread-safety: none (tests).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "backstep/gdbstub/target.h"

namespace backstep::gdbstub {

class FakeTarget : public Target,
                   public ReverseExecution,
                   public Breakpoints,
                   public Watchpoints,
                   public TraceFrames,
                   public MonitorCommands,
                   public MemoryMap {
 public:
  struct Capabilities {
    bool reverse = true, breakpoints = true, watchpoints = true, read_watchpoints = false;
    bool trace_frames = true, monitor = true, memory_map = true, host_info = true, auxv = true;
  };
  struct Write {
    std::uint64_t position;  // the instruction that writes
    core::Address addr;
    std::uint64_t length;
  };
  struct WatchRange {
    WatchKind kind;
    core::Address addr;
    std::uint64_t length;
    auto operator<=>(const WatchRange&) const = default;
  };

  FakeTarget();

  // ---- Configuration and observation (public on purpose: it is a fake).
  Capabilities caps;
  std::vector<core::Address> pcs;
  std::vector<core::ThreadId> thread_at;  // the thread of each position
  std::vector<ThreadInfo> threads;
  std::map<core::Address, std::vector<std::uint8_t>> memory;
  std::vector<Write> writes;
  std::map<std::string, std::string, std::less<>> documents;
  std::vector<std::uint8_t> auxv_bytes;
  std::string exec_path;  // empty: qXfer:exec-file is not offered
  std::uint64_t position = 0;
  std::optional<std::uint32_t> selected_frame;
  // A trace recorded by tracepoints (nullopt: none): uploaded, and with it
  // trace state variable 2 (= -frame at a selected frame) and traceframe-info.
  std::optional<core::TracepointDefinitions> definitions;
  std::set<std::pair<BreakpointType, core::Address>> inserted_breakpoints;
  std::set<WatchRange> inserted_watchpoints;
  std::optional<core::ThreadId> last_resume_thread;
  int resume_count = 0;

  // ---- Target
  const HostInfo* host_info() override { return caps.host_info ? &kHostInfo : nullptr; }
  RegisterLayout register_layout() override;
  core::Expected<RegisterValue> ReadRegister(core::ThreadId thread, int regnum) override;
  std::size_t ReadMemory(core::Address addr, std::span<std::uint8_t> out) override;
  std::vector<ThreadInfo> Threads() override { return threads; }
  core::ThreadId current_thread() override { return thread_at[position]; }
  core::Expected<StopReason> Resume(ResumeKind kind, std::optional<core::ThreadId> thread,
                                    const std::atomic<bool>* interrupt) override;
  std::optional<std::string_view> TargetDescription(std::string_view annex) override;
  std::string_view exec_file() override { return exec_path; }
  std::span<const std::uint8_t> auxv() override {
    return caps.auxv ? std::span<const std::uint8_t>(auxv_bytes) : std::span<const std::uint8_t>();
  }
  ReverseExecution* reverse_execution() override { return caps.reverse ? this : nullptr; }
  Breakpoints* breakpoints() override { return caps.breakpoints ? this : nullptr; }
  Watchpoints* watchpoints() override { return caps.watchpoints ? this : nullptr; }
  TraceFrames* trace_frames() override { return caps.trace_frames ? this : nullptr; }
  MonitorCommands* monitor_commands() override { return caps.monitor ? this : nullptr; }
  MemoryMap* memory_map() override { return caps.memory_map ? this : nullptr; }

  // ---- Capabilities
  core::Expected<StopReason> ResumeBackward(ResumeKind kind, std::optional<core::ThreadId> thread,
                                            const std::atomic<bool>* interrupt) override;
  core::Status InsertBreakpoint(BreakpointType type, core::Address addr,
                                std::uint64_t kind) override;
  core::Status RemoveBreakpoint(BreakpointType type, core::Address addr,
                                std::uint64_t kind) override;
  bool Supports(WatchKind kind) const override;
  core::Status InsertWatchpoint(WatchKind kind, core::Address addr, std::uint64_t length) override;
  core::Status RemoveWatchpoint(WatchKind kind, core::Address addr, std::uint64_t length) override;
  std::uint64_t frame_count() override { return pcs.size(); }
  std::optional<TraceFrameHit> FindFrame(const TraceFrameQuery& query,
                                         std::optional<std::uint32_t> current) override;
  core::Status SelectFrame(std::optional<std::uint32_t> frame) override;
  const core::TracepointDefinitions* tracepoint_definitions() override {
    return definitions ? &*definitions : nullptr;
  }
  std::optional<std::int64_t> TraceVariable(std::int32_t number) override {
    if (!selected_frame || number != 2) return std::nullopt;
    return -static_cast<std::int64_t>(*selected_frame);  // $v2 = -frame
  }
  std::optional<std::string> TraceframeInfo() override {
    if (!selected_frame) return std::nullopt;
    return "<traceframe-info><tvar id=\"2\"/></traceframe-info>";
  }
  core::Expected<std::string> RunMonitorCommand(std::string_view command) override;
  MemoryRegion RegionAt(core::Address addr) override;

  static constexpr int kRegisterCount = 18;
  static constexpr int kPcRegnum = 16;
  static constexpr int kUnknownRegnum = 15;
  static const HostInfo kHostInfo;

 private:
  // The stop at `to` if instruction `writer` wrote a watched range.
  std::optional<StopReason> WatchHit(std::uint64_t writer) const;
  std::optional<StopReason> BreakpointHit(std::uint64_t at) const;
  std::uint32_t TracepointOf(std::uint64_t frame) const { return 1 + frame % 2; }
};

}  // namespace backstep::gdbstub
