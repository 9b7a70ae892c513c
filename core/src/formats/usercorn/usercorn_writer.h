// UsercornWriter: writes UCIR traces byte for byte, streaming.
//
// Two levels on one object:
//
// * Ops (tests, fixtures): the 74-byte header is written at creation; then
//   each op method appends one op to the innermost open container
//   (KEYFRAME/FRAME, SYSCALL) or, with none open, to the top level. A
//   container is buffered until its End*() writes its header with the
//   number of ops it got (or `count_override`, to make invalid files), or,
//   when Begin*() is given `declared_count`, its header is written at once
//   and its ops are streamed (top level only; End*() then checks the
//   count). The op stream goes through SnappyFrameWriter (chunk mode and
//   size are options, so tests get compressed, stored and straddling
//   chunks).
//
// * Recording (`backstep record`, the generic converter): Begin() writes
//   the keyframe, AppendInstruction()/AppendSyscall()/AppendExit() the
//   execution, Finish() completes the file. They produce what usercorn's
//   tracer produces: a keyframe of REGs then MEM_MAP + MEM_WRITE per
//   mapping; a new FRAME starting with JMP at every pc that is not the
//   previous instruction's fall-through; per instruction its MEM_READs,
//   MEM_WRITEs, REGs and STEP; a SYSCALL after the STEP of its instruction.
//   Memory stays bounded: the keyframe streams one mapping at a time,
//   frames are split past `max_frame_bytes`, chunks are 64 KiB; the most
//   held at once is one syscall's effects (buffered: its header counts
//   them). Finish() may be called at any point (Ctrl-C): the file is then
//   complete up to the last append.
//
// Errors (I/O, misuse such as End*() without Begin*() or a declared count
// not met) are sticky: status() and Finish() report the first.
//
// Thread-safety: one thread at a time.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "backstep/core/event.h"
#include "backstep/core/expected.h"
#include "backstep/core/usercorn_recording.h"
#include "formats/usercorn/snappy_stream.h"
#include "formats/usercorn/usercorn_format.h"
#include "util/atomic_file.h"

namespace backstep::core {

struct UsercornWriterOptions {
  std::string arch = "x86_64";  // written as is (NUL-padded to 32 bytes)
  std::string os = "linux";
  std::uint32_t version = kUcirVersion;
  std::uint8_t code_order = kUcirLittleEndian, data_order = kUcirLittleEndian;
  SnappyChunkMode chunk_mode = SnappyChunkMode::kAuto;
  std::size_t chunk_size = kSnappyMaxChunkData;
  // Begin(): reproduce usercorn's keyframe bug (docs/formats/usercorn.md §2.3): trim the
  // leading and trailing zero bytes of a mapping's data and write the rest
  // at the mapping's start. Default: trim both ends and write the rest where
  // it belongs.
  bool trim_quirk = false;
  // Begin(): start the keyframe with a MEM_READ of size 0, which declares
  // that every instruction's reads are recorded (usercorn_reader.h).
  bool declare_reads = false;
  // AppendInstruction() closes a frame past this many bytes of ops.
  std::size_t max_frame_bytes = std::size_t{1} << 20;
};

class UsercornWriter final : public UsercornRecordingWriter {
 public:
  static Expected<std::unique_ptr<UsercornWriter>> CreateFile(const std::string& path,
                                                              UsercornWriterOptions options = {});
  static std::unique_ptr<UsercornWriter> CreateMemory(UsercornWriterOptions options = {});
  // A part (usercorn_recording.h's CreateUsercornPart): no header; the
  // snappy identifier only when `first`.
  static Expected<std::unique_ptr<UsercornWriter>> CreatePart(const std::string& path, bool first,
                                                              UsercornWriterOptions options = {});
  ~UsercornWriter() override;

  // --- ops ---
  void BeginKeyframe(std::uint64_t pid, std::optional<std::uint32_t> declared_count = {});
  void BeginFrame(std::uint64_t pid, std::optional<std::uint32_t> declared_count = {});
  void EndFrame(std::optional<std::uint32_t> count_override = {});  // either kind
  void BeginSyscall(std::uint32_t num, std::uint64_t ret,
                    std::span<const std::uint64_t> args) override;
  void EndSyscall(std::optional<std::uint16_t> count_override = {}) override;
  void Nop();
  void Jmp(Address address, std::uint32_t block_size);
  void Step(std::uint8_t size);
  void Reg(std::uint16_t unicorn, std::uint64_t value) override;
  void SpReg(std::uint16_t unicorn, std::span<const std::uint8_t> value) override;
  void MemRead(Address address, std::uint32_t size);
  void MemWrite(Address address, std::span<const std::uint8_t> data) override;
  void MemMap(const UsercornMapping& mapping) override;
  void MemUnmap(Address address, std::uint64_t size) override;
  void MemProt(Address address, std::uint64_t size, std::uint8_t prot) override;
  void Exit();
  // Bytes appended as one op (invalid ops for tests).
  void Raw(std::span<const std::uint8_t> bytes);

  // --- recording ---
  // Fills *data (empty on entry) with a mapping's contents from its start.
  // It may stop early: the bytes past data->size() are zero (so a huge
  // reservation costs nothing).
  // The keyframe (REG per register, in order: pass the non-zero ones, as
  // the tracer does, plus the optional registers that are known; then SPREG
  // per special register), then, if `pc` is known, the first FRAME with
  // JMP(pc). Mappings are read one at a time.
  Status Begin(std::uint64_t pid, std::span<const UsercornRegisterValue> registers,
               std::span<const UsercornMapping> mappings, const MappingReader& read_mapping,
               std::optional<Address> pc, std::span<const SpecialRegister> special = {}) override;
  // One executed instruction. A JMP(pc) in a new FRAME goes first when pc is
  // not the previous instruction's fall-through.
  void AppendInstruction(const UsercornInstruction& insn) override;
  // A JMP to `pc` in a new FRAME: where the last instruction really went.
  void AppendJump(Address pc);
  // Effects of no instruction, then AppendJump(effects.pc): the reader makes
  // them an event of their own (a JMP that no STEP precedes). A 0-byte
  // MEM_READ at pc stands in for empty effects so that the event is not
  // merged into the previous one.
  void AppendJumpEvent(const UsercornInstruction& effects) override;
  void AppendSignal(int signal, std::span<const std::uint8_t> siginfo,
                    const UsercornInstruction& effects) override;
  void AppendKilled(int signal) override;
  void AppendExec(const Exec& exec) override;
  // Effects alone (effects.pc is ignored): the reader adds them to the event
  // of the next STEP or JMP.
  void AppendEffects(const UsercornInstruction& effects);
  // Kernel side effects of the syscall instruction appended last.
  void AppendSyscall(const UsercornSyscall& syscall);
  void AppendExit() override;
  void SwitchThread(std::uint64_t pid, std::optional<Address> next_pc) override;
  void StartThread(std::span<const UsercornRegisterValue> registers,
                   std::span<const SpecialRegister> special, Address pc) override;
  // Makes everything appended so far complete chunks in the file.
  void Flush();
  void Cut() override { Flush(); }
  void Resume(std::optional<Address> next_pc) override { next_pc_ = next_pc; }
  Status AppendPart(const std::string& path, std::uint64_t size) override;
  std::uint64_t bytes_written() const override { return written_; }

  // Closes open containers, flushes, commits the file.
  Status Finish() override;
  Status status() const override { return status_; }
  // Memory mode, after Finish(): the file's bytes.
  std::vector<std::uint8_t> TakeBytes() { return std::move(buf_); }

 private:
  struct Container {
    std::uint8_t type;  // kOpFrame, kOpKeyframe, kOpSyscall
    std::vector<std::uint8_t> header;
    std::vector<std::uint8_t> ops;
    std::uint64_t count = 0;
    std::optional<std::uint32_t> declared;  // streamed
  };

  explicit UsercornWriter(UsercornWriterOptions options);
  void WriteHeader();
  void Output(std::span<const std::uint8_t> bytes);
  // Appends one op (fixed part + data) to the innermost container.
  void Emit(std::span<const std::uint8_t> head, std::span<const std::uint8_t> data = {});
  void Begin(std::uint8_t type, std::vector<std::uint8_t> header,
             std::optional<std::uint32_t> declared);
  void End(std::uint8_t type, std::optional<std::uint64_t> count_override);
  void Fail(const std::string& what);
  void EnsureFrame();
  void WriteMapping(const UsercornMapping& m, std::span<const std::uint8_t> data);

  UsercornWriterOptions options_;
  // Writes part_buf_ out to part_fd_.
  void WritePart();

  std::optional<AtomicFile> file_;
  std::vector<std::uint8_t> buf_;  // memory mode: the file
  int part_fd_ = -1;               // part mode: the file (buffered in part_buf_)
  std::string part_path_;
  std::vector<std::uint8_t> part_buf_;
  std::uint64_t written_ = 0;
  SnappyFrameWriter snappy_;
  std::vector<Container> open_;
  std::vector<std::uint8_t> head_;  // scratch for one op's fixed part
  Status status_;
  std::uint64_t pid_ = 0;
  std::optional<Address> next_pc_;  // fall-through of the last instruction
  std::map<std::uint64_t, std::optional<Address>> thread_next_pc_;  // other threads'
  bool finished_ = false;
};

}  // namespace backstep::core
