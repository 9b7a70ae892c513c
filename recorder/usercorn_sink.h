// UsercornSink: a RecordingSink that writes a usercorn UCIR trace through
// core's UsercornRecordingWriter (backstep/core/usercorn_recording.h).
//
// Registers go out by their Unicorn enum (usercorn_registers.h): values of
// at most 8 bytes as REG (k0-7 too), wider ones (xmm0-31, x87 fpr) as
// SPREG. ymmNh, which Unicorn has no enum for, goes out as SPREG of
// UC_X86_REG_YMMn (154 + n) with the full 32 bytes (xmmN low, ymmNh high),
// zmmNh as SPREG of UC_X86_REG_ZMMn (186 + n) with all 64 bytes; fioff/fiseg and
// fooff/foseg go out as one u64 REG of UC_X86_REG_FIP / _FDP (offset low,
// "segment" high: gdb's split of the 64-bit pointers). Registers the reader's
// table does not know are skipped by the reader, never misread.
// Tracked registers (the GPRs) appear in the keyframe only when non-zero,
// as usercorn's tracer does; the others whenever known.
//
// The mappings: MEM_MAP desc = the /proc/PID/maps name, file = the same
// when it is a path (so the executable's path is the file of its mappings),
// then the contents. The auxiliary vector needs no op of its own: the
// keyframe's stack holds it above argv and envp (position 0 is the state
// right after exec, rsp at argc), where the recorder checks it is.
//
// Parts (usercorn_recording.h's CreateUsercornPart): a trace cut into
// intervals can be written by several sinks at once, one part each, and
// joined by concatenation. What a sink keeps across a cut is the writer's
// fall-through pc and the vector and split registers' halves (Convert); a
// part that continues another gets both from OnStart (the state where it
// starts), without writing a keyframe, so that it writes what one sink
// writing every interval writes, provided that sink calls Cut() where the
// parts meet.
//
// Thread-safety: one thread at a time.
#pragma once

#include <array>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "backstep/core/expected.h"
#include "backstep/core/usercorn_recording.h"
#include "recorder/recording_sink.h"

namespace backstep::record {

class UsercornSink final : public RecordingSink {
 public:
  // `records_reads`: the trace declares that it holds every read (the
  // recorder runs with RecordOptions::reads), and OnInstruction writes them.
  static core::Expected<std::unique_ptr<UsercornSink>> Create(const std::string& path,
                                                              bool records_reads = false);
  // A part of a trace (see above): `first`, the one with the keyframe.
  static core::Expected<std::unique_ptr<UsercornSink>> CreatePart(const std::string& path,
                                                                  bool first);
  ~UsercornSink() override;

  // Where two parts meet: the writer's Cut().
  void Cut();
  // Appends a finished part (`size`: the bytes it reported) as is; then
  // OnKilled and Finish write nothing more (the last part holds the end),
  // Finish completes the file.
  core::Status AppendPart(const std::string& path, std::uint64_t size);
  // Bytes written so far (a finished part's size).
  std::uint64_t bytes_written() const;

  core::Status OnStart(const StartInfo& start) override;
  void OnInstruction(const InstructionRecord& insn) override;
  void OnSyscall(const SyscallRecord& syscall) override;
  // Thread n goes out as FRAMEs of pid n (thread n + 1 to backstep's
  // reader); a new thread's state is an event of its own (REG, SPREG, JMP).
  void OnThreadSwitch(std::uint32_t to, std::optional<core::Address> from_next_pc) override;
  void OnThreadStart(const ThreadStartRecord& start) override;
  // A signal's delivery is an event of its own: its writes and registers,
  // then a JMP to the handler.
  void OnSignal(const SignalRecord& signal) override;
  void OnKilled(int signal) override;
  // A new image: one SYSCALL kUcirExec (usercorn_recording.h) in the
  // execve instruction's event, every register written (the tracked ones
  // even when 0), then a JMP to the new image's first instruction.
  core::Status OnExec(const ExecRecord& exec) override;
  core::Status Finish(bool exited) override;

 private:
  UsercornSink(std::unique_ptr<core::UsercornRecordingWriter> writer, bool resume);
  // Splits registers into REG values (regs_) and SPREG data (special_,
  // spans into special_bytes_), valid until the next call.
  void Convert(std::span<const core::RegisterWrite> registers, bool keyframe);

  std::unique_ptr<core::UsercornRecordingWriter> writer_;
  std::vector<core::UsercornRegisterValue> regs_;
  std::vector<core::UsercornRecordingWriter::SpecialRegister> special_;
  std::vector<std::uint8_t> special_bytes_;
  std::vector<std::pair<std::uint16_t, std::size_t>> special_sizes_;  // unicorn, bytes
  // The current thread's register halves (other threads' in others_).
  struct Halves {
    std::array<std::array<std::uint8_t, 64>, 32> zmm{};  // xmmN | ymmNh | zmmNh
    std::map<std::uint16_t, std::uint64_t> split;        // FIP, FDP (both halves)
  };
  Halves halves_;
  std::map<std::uint32_t, Halves> others_;
  std::uint32_t thread_ = 0;
  bool finished_ = false;
  bool killed_ = false;  // OnKilled: the EXIT is written
  bool resume_ = false;  // a part that continues another: OnStart writes no keyframe
  bool joined_ = false;  // parts appended: they hold the whole trace
};

}  // namespace backstep::record
