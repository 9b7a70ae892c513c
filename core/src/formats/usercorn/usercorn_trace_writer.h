// UsercornTraceWriter: the generic TraceWriter for usercorn UCIR
// (`backstep convert --to usercorn`), on top of UsercornWriter's recording
// level.
//
// What a converted trace holds (docs/formats/usercorn.md, "Writing"):
//   * Header "x86_64" / "linux", version 1. x86-64 virtual-memory traces
//     (ThreadId t becomes pid t - 1) only; anything else is Unsupported,
//     like events that clear state. Several threads: one at position 0
//     (the keyframe's), the others' events in FRAMEs of their pids, as
//     `backstep record` writes them (UsercornWriter::SwitchThread).
//   * Keyframe: REG for every tracked register (GPRs) that is non-zero,
//     REG/SPREG for every optional one (eflags, selectors, fs/gs base, x87,
//     mxcsr, xmm0-31, k0-7; YMMn for ymmNh, ZMMn for zmmNh, when all
//     their parts are known) that is known; MEM_MAP + MEM_WRITE per header region, with
//     the initial image (unknown bytes written as 0, trailing and leading
//     zeros trimmed and the data placed right, unless the trim quirk is
//     asked for; regions over 4 GiB are mapped without data). A tracked
//     register unknown at position 0 would read back as 0: Unsupported.
//   * A source that records reads is declared as one (a MEM_READ 0, 0 in
//     the keyframe), so the converted trace records reads too.
//   * Instruction events: MEM_READ (address and size only), MEM_WRITE, REG
//     or SPREG with the value after the event for each carried register it
//     touches, STEP(rip delta when it is 1..15, else 0), then a JMP when
//     rip does not end at pc + size. Registers usercorn cannot carry
//     (usercorn_registers.h has the table) are dropped.
//   * Other events (syscall, marker, exception, ...): their effects then a
//     JMP to rip, which the reader decodes as an event of its own (so
//     positions are kept, kinds and descriptions are not). A marker "exit"
//     without effects becomes EXIT. When rip is unknown there is no JMP and
//     the effects join the next event.
//
// Thread-safety: one thread at a time.
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <string>

#include "backstep/core/trace_writer.h"
#include "backstep/core/usercorn_registers.h"
#include "formats/usercorn/usercorn_writer.h"

namespace backstep::core {

class UsercornTraceWriter final : public TraceWriter {
 public:
  explicit UsercornTraceWriter(std::string path, UsercornWriterOptions options = {})
      : path_(std::move(path)), options_(std::move(options)) {}

  Status Begin(const TraceHeader& header,
               const std::vector<std::pair<ThreadId, RegisterFile>>& initial_registers,
               const InitialMemoryFn& initial_memory) override;
  Status Append(const Event& event) override;
  Status Finish() override;
  // MEM_READ holds an address and a size, no value.
  bool StoresReadValues() const override { return false; }

 private:
  Status UseThread(ThreadId thread, const std::string& where);
  // The three-part enum (ZMMn) whose top part `id` is (zmmNh), or
  // kNoUnicornRegister.
  std::uint16_t TopOwner(RegisterId id);
  // The carried registers among `touched`, as REG values and SPREG bytes.
  void CollectRegisters(const std::vector<RegisterId>& touched);

  std::string path_;
  UsercornWriterOptions options_;
  const UsercornArch& arch_ = UsercornX86_64();
  std::unique_ptr<UsercornWriter> writer_;
  std::map<ThreadId, RegisterFile> threads_;  // each thread's state, tracked
  RegisterFile* regs_ = nullptr;              // the current thread's, in threads_
  std::optional<ThreadId> thread_;
  std::uint64_t events_ = 0;
  std::vector<RegisterId> touched_;
  std::vector<UsercornRegisterValue> values_;
  std::vector<std::vector<std::uint8_t>> special_bytes_;
  std::vector<UsercornWriter::SpecialRegister> special_;
  std::vector<std::uint16_t> top_owner_;  // by register: TopOwner(), built on first use
};

}  // namespace backstep::core
