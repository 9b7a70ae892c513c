// UsercornRecordingWriter: a streaming UCIR (usercorn) writer for
// recorders, `backstep record` first.
//
// The generic TraceWriter (CreateTraceWriter("usercorn", path)) writes what
// canonical events say; a recorder knows more than events carry (mapping
// names and file offsets, the syscall a memory change came from, Unicorn's
// special registers), so it writes at UCIR's own level: Begin() writes the
// keyframe, AppendInstruction()/AppendExit() the execution, the op methods
// (BeginSyscall ... EndSyscall) a syscall with its effects, Finish() renames
// the complete file into place. The layout is docs/formats/usercorn.md;
// Unicorn register enums come from usercorn_registers.h.
//
// Memory stays bounded (one mapping, one frame of at most 1 MiB, one
// syscall's effects at a time). Errors are sticky: status() and Finish()
// report the first. Destroyed without Finish(), nothing is left behind.
//
// Thread-safety: one thread at a time.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "backstep/core/event.h"
#include "backstep/core/expected.h"
#include "backstep/core/status.h"
#include "backstep/core/types.h"

namespace backstep::core {

// MEM_MAP / MEM_PROT protection bits.
inline constexpr std::uint8_t kProtRead = 1, kProtWrite = 2, kProtExec = 4;

struct UsercornMapping {
  Address address = 0;
  std::uint64_t size = 0;
  std::uint8_t prot = kProtRead | kProtWrite | kProtExec;
  std::uint64_t file_offset = 0, file_length = 0;
  std::string desc, file;
};

// backstep's SYSCALL numbers for signals (no Linux system call has them, so
// other UCIR readers show them as unknown system calls), args[0] = the Linux
// signal number (a delivery: then the kernel's 128-byte siginfo_t as 16
// little-endian u64, when known): kUcirSignalDelivered + n inside the event that delivers
// signal n; kUcirKilledBySignal + n holding EXIT at the end of a process
// that signal n ended.
inline constexpr std::uint32_t kUcirSignalDelivered = 0x53494700;  // "SIG\0"
inline constexpr std::uint32_t kUcirKilledBySignal = 0x4b494c00;   // "KIL\0"
inline constexpr std::uint32_t kUcirMaxSignal = 0xff;
inline constexpr std::size_t kUcirSiginfoSize = 128;

// backstep's SYSCALL number for a successful execve (or execveat): the
// event of the `syscall` instruction holds the whole change of image in
// it: MEM_UNMAP of every old mapping, MEM_MAP + MEM_WRITE (all bytes,
// untrimmed) of every new one, REG/SPREG of every register (tracked ones
// even when 0), then a JMP to the new image's first instruction. args =
// [the Linux system call number, the executable's path length in bytes,
// the path's bytes packed little-endian into u64 words, 0-padded], so a
// path holds at most kUcirMaxExecPath bytes.
inline constexpr std::uint32_t kUcirExec = 0x45584500;  // "EXE\0"
inline constexpr std::size_t kUcirMaxExecPath = (0xff - 2) * 8;

struct UsercornRegisterValue {
  std::uint16_t unicorn = 0;  // Unicorn enum (usercorn_registers.h)
  std::uint64_t value = 0;
};

struct UsercornInstruction {
  Address pc = 0;
  bool pc_known = true;                 // false: no JMP is written before it
  std::uint8_t size = 0;                // 0 when unknown (a JMP then gives the next pc)
  std::span<const MemoryAccess> reads;  // only address and data.size() are written
  std::span<const MemoryAccess> writes;
  std::span<const UsercornRegisterValue> registers;  // values after it
  std::span<const std::pair<std::uint16_t, std::span<const std::uint8_t>>> special;  // SPREG
  bool empty() const {
    return reads.empty() && writes.empty() && registers.empty() && special.empty();
  }
};

struct UsercornSyscall {
  std::uint32_t num = 0;
  std::uint64_t ret = 0;
  std::span<const std::uint64_t> args;  // at most 255
  std::span<const std::pair<Address, std::uint64_t>> unmaps;
  std::span<const UsercornMapping> maps;
  std::span<const MemoryAccess> writes;
  std::span<const UsercornRegisterValue> registers;
};

class UsercornRecordingWriter {
 public:
  using MappingReader = std::function<Status(const UsercornMapping&, std::vector<std::uint8_t>*)>;
  using SpecialRegister = std::pair<std::uint16_t, std::span<const std::uint8_t>>;

  virtual ~UsercornRecordingWriter() = default;

  // The keyframe: registers, then each mapping with the contents
  // `read_mapping` gives (may be empty: mappings without contents); `pc`,
  // when known, starts the first frame.
  virtual Status Begin(std::uint64_t pid, std::span<const UsercornRegisterValue> registers,
                       std::span<const UsercornMapping> mappings, const MappingReader& read_mapping,
                       std::optional<Address> pc,
                       std::span<const SpecialRegister> special = {}) = 0;
  virtual void AppendInstruction(const UsercornInstruction& insn) = 0;
  virtual void AppendExit() = 0;
  // Effects of no instruction (a signal's delivery): memory writes and
  // registers, then a JMP to effects.pc; the reader makes them an event of
  // their own.
  virtual void AppendJumpEvent(const UsercornInstruction& effects) = 0;
  // The delivery of Linux signal `signal` (1..kUcirMaxSignal): effects as
  // AppendJumpEvent(), with a SYSCALL kUcirSignalDelivered + signal among
  // them (none: a signal that had no effect, such as a stop the recorder
  // resumed).
  // `siginfo`: the kernel's siginfo_t (128 bytes) or empty.
  virtual void AppendSignal(int signal, std::span<const std::uint8_t> siginfo,
                            const UsercornInstruction& effects) = 0;
  // The process ended by Linux signal `signal`: EXIT inside a SYSCALL
  // kUcirKilledBySignal + signal.
  virtual void AppendKilled(int signal) = 0;

  // A new image (execve) after the STEP of its `syscall` instruction: a
  // SYSCALL kUcirExec holding the unmaps, the new mappings with the
  // contents `read_mapping` gives (written whole), every register, then a
  // JMP to `pc`. Fails (status()) when the path is longer than
  // kUcirMaxExecPath.
  struct Exec {
    std::uint32_t syscall = 59;  // execve (322: execveat)
    std::string path;
    std::span<const std::pair<Address, std::uint64_t>> unmaps;
    std::span<const UsercornMapping> maps;
    MappingReader read_mapping;
    std::span<const UsercornRegisterValue> registers;
    std::span<const SpecialRegister> special;
    Address pc = 0;
  };
  virtual void AppendExec(const Exec& exec) = 0;

  // Threads: what follows goes into FRAMEs of `pid` (Begin()'s pid is the
  // first thread). `next_pc`: where the thread written so far continues; a
  // JMP to it ends that thread's last event when it is not the fall-through
  // (each thread's next pc is kept, so switching back needs no JMP).
  virtual void SwitchThread(std::uint64_t pid, std::optional<Address> next_pc) = 0;
  // A new thread (after SwitchThread to its pid): its registers, then a JMP
  // to its first instruction, which makes an event of their own.
  virtual void StartThread(std::span<const UsercornRegisterValue> registers,
                           std::span<const SpecialRegister> special, Address pc) = 0;

  // A SYSCALL container and the ops that go in it.
  virtual void BeginSyscall(std::uint32_t num, std::uint64_t ret,
                            std::span<const std::uint64_t> args) = 0;
  virtual void EndSyscall(std::optional<std::uint16_t> count_override = {}) = 0;
  virtual void Reg(std::uint16_t unicorn, std::uint64_t value) = 0;
  virtual void SpReg(std::uint16_t unicorn, std::span<const std::uint8_t> value) = 0;
  virtual void MemWrite(Address address, std::span<const std::uint8_t> data) = 0;
  virtual void MemMap(const UsercornMapping& mapping) = 0;
  virtual void MemUnmap(Address address, std::uint64_t size) = 0;
  virtual void MemProt(Address address, std::uint64_t size, std::uint8_t prot) = 0;

  // Parts: a trace written by several processes at once, each a part of
  // it, and joined by concatenating their bytes
  // (recorder/native/materialize.h). A part (CreateUsercornPart) is op
  // chunks with no file header; a cut is a point of the op stream where no
  // container is open and no byte is buffered, so that what follows starts
  // a chunk of its own whether one writer goes on or the next part's
  // starts there. What else crosses a cut is the fall-through pc
  // (Resume) and the thread (the first: parts are single-threaded).
  //
  // Cut(): closes the open frame and writes the buffered bytes out as a
  // (short) chunk, as Finish() does at a part's end.
  virtual void Cut() = 0;
  // In place of Begin() in a part that continues another: no keyframe; the
  // first instruction follows `next_pc` (the previous part's fall-through)
  // as it would in one writer.
  virtual void Resume(std::optional<Address> next_pc) = 0;
  // Appends the part file at `path`, which its writer finished at
  // `size` bytes, as is (copy_file_range); this writer must be at a cut.
  // Corruption naming the file and offset when it is not `size` bytes of
  // whole snappy chunks.
  virtual Status AppendPart(const std::string& path, std::uint64_t size) = 0;
  // Bytes written out so far (a part's size once it is finished).
  virtual std::uint64_t bytes_written() const = 0;

  // Completes the file and renames it into place; may be called at any
  // point (Ctrl-C): the file is then complete up to the last append. A
  // part is closed where it is (no rename).
  virtual Status Finish() = 0;
  virtual Status status() const = 0;
};

// A UCIR file writer for x86-64 Linux (header arch "x86_64", os "linux").
// `records_reads`: the keyframe declares (with a MEM_READ of size 0) that
// every instruction's reads are in the file, so readers report them.
Expected<std::unique_ptr<UsercornRecordingWriter>> CreateUsercornRecording(
    const std::string& path, bool records_reads = false);
// A part of such a file (see Cut()): the op stream only, written to `path`
// as it goes (a plain file, no rename, no fsync). `first`: the part the
// file starts with (the snappy stream's identifier, then Begin()); else
// one that continues another (no identifier, then Resume()).
Expected<std::unique_ptr<UsercornRecordingWriter>> CreateUsercornPart(const std::string& path,
                                                                      bool first,
                                                                      bool records_reads = false);

}  // namespace backstep::core
