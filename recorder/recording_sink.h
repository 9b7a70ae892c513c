// RecordingSink: where the recorder (recorder.h) sends what it observes.
//
// The recorder speaks in backstep's canonical terms (X86_64() RegisterIds,
// virtual addresses) and knows nothing of file formats; a sink turns the
// calls into a trace file (usercorn_sink.h writes UCIR) or, in tests, keeps
// them. Calls come in this order:
//
//   OnStart  once, stopped before the first instruction after exec: the
//            whole image (mappings, a reader for their contents), every
//            register, the auxiliary vector and the executable's path.
//   OnInstruction / OnSyscall, in execution order:
//     - OnInstruction per retired instruction: the registers it changed
//       (values after it; rip is implied by pc + size or the next pc), the
//       memory it wrote (contents after it) and the memory it read;
//     - OnSyscall right after the OnInstruction of a `syscall`: the
//       kernel's side effects (mappings, memory, registers).
//     - OnExec right after the OnInstruction of a `syscall` that replaced
//       the image (execve): the new image as OnStart gives it, and the
//       mappings of the old one that went away.
//   OnThreadSwitch / OnThreadStart between them when the program has
//            several threads (one runs at a time).
//   Finish   once (exit, Ctrl-C, --max-insns, error): completes the file.
//
// Spans passed to a sink are valid only during the call.
//
// Thread-safety: one thread at a time.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "backstep/core/event.h"
#include "backstep/core/register_file.h"
#include "backstep/core/status.h"

namespace backstep::record {

// One mapping of /proc/PID/maps.
struct Mapping {
  core::Address start = 0;
  std::uint64_t size = 0;
  bool read = false, write = false, exec = false;
  std::uint64_t file_offset = 0;
  std::string name;  // path, "[stack]", "[heap]", "[vdso]", or ""
  core::Address end() const { return start + size; }
};

// Fills *out with a mapping's contents (size bytes; unreadable pages, such
// as [vvar]'s, read as zeros).
using MappingContents = std::function<core::Status(const Mapping&, std::vector<std::uint8_t>*)>;

struct StartInfo {
  std::uint64_t pid = 0;
  std::string executable;          // /proc/PID/exe
  std::vector<std::uint8_t> auxv;  // /proc/PID/auxv, raw (u64 type, u64 value pairs)
  std::vector<Mapping> mappings;
  MappingContents contents;
  // Every register the recorder tracks, values before the first instruction.
  std::span<const core::RegisterWrite> registers;
  core::Address pc = 0;
};

struct InstructionRecord {
  core::Address pc = 0;
  std::uint8_t size = 0;
  std::span<const core::RegisterWrite> registers;  // changed ones, values after
  std::span<const core::MemoryAccess> writes;      // contents after
  // What it read (RecordOptions::reads): contents before it when
  // RecordOptions::read_values, else zeros of the right size.
  std::span<const core::MemoryAccess> reads;
};

// A thread the program created (clone with CLONE_THREAD), before its first
// instruction.
struct ThreadStartRecord {
  std::uint32_t thread = 0;                        // 1, 2, ... in creation order
  std::span<const core::RegisterWrite> registers;  // every tracked register
  core::Address pc = 0;
};

// A signal the program handles, delivered before the next instruction: the
// kernel's frame on the stack (writes), the registers it set (values after)
// and the handler's first instruction.
struct SignalRecord {
  int signal = 0;
  core::Address handler = 0;
  std::span<const std::uint8_t> siginfo;  // the kernel's siginfo_t (128 bytes), if read
  std::span<const core::RegisterWrite> registers;
  std::span<const core::MemoryAccess> writes;
};

struct SyscallRecord {
  std::uint32_t number = 0;
  std::uint64_t result = 0;
  std::uint64_t args[6] = {};
  std::span<const Mapping> unmapped;    // ranges removed (name unused)
  std::span<const Mapping> mapped;      // new mappings (contents come in `writes`)
  std::span<const Mapping> protected_;  // ranges whose protection changed
  std::span<const core::MemoryAccess> writes;
  std::span<const core::RegisterWrite> registers;  // changed by the kernel
};

// A successful execve (the process stays, its image is replaced): the new
// image, as StartInfo describes the first one.
struct ExecRecord {
  std::uint32_t syscall = 0;                       // 59 execve, 322 execveat
  std::string executable;                          // /proc/PID/exe after the exec
  std::span<const Mapping> unmapped;               // every mapping of the old image
  std::span<const Mapping> mappings;               // every mapping of the new one
  MappingContents contents;                        // of `mappings`
  std::span<const core::RegisterWrite> registers;  // every tracked register
  core::Address pc = 0;                            // the new image's first instruction
};

class RecordingSink {
 public:
  virtual ~RecordingSink() = default;
  virtual core::Status OnStart(const StartInfo& start) = 0;
  virtual void OnInstruction(const InstructionRecord& insn) = 0;
  virtual void OnSyscall(const SyscallRecord& syscall) = 0;
  // Threads (0 is the initial thread; the calls are about thread 0 until
  // the first switch): the calls that follow are about thread `to`.
  // `from_next_pc`: where the thread the calls were about so far continues
  // (unset when it exited). A sink that ignores threads may ignore both.
  virtual void OnThreadSwitch(std::uint32_t to, std::optional<core::Address> from_next_pc) {
    (void)to, (void)from_next_pc;
  }
  // A signal's delivery (between two OnInstruction calls): a handled one's
  // frame and jump, or nothing (ignored, fatal, or a stop the recorder
  // resumed: registers and writes empty, handler = the current pc).
  virtual void OnSignal(const SignalRecord& signal) { (void)signal; }
  // Right before Finish(true) when signal `signal` ended the program.
  virtual void OnKilled(int signal) { (void)signal; }
  // A new image (see ExecRecord); a sink that cannot hold one refuses it
  // (the recording then ends before the exec, with the status's message).
  virtual core::Status OnExec(const ExecRecord& exec) {
    (void)exec;
    return core::Status::Unsupported("the program calls execve: this trace format holds one image");
  }
  // Right after OnThreadSwitch(start.thread): the new thread's state.
  virtual void OnThreadStart(const ThreadStartRecord& start) { (void)start; }
  // `exited`: the program ended (as opposed to being cut short).
  virtual core::Status Finish(bool exited) = 0;
};

}  // namespace backstep::record
