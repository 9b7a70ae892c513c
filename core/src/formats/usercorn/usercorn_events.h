// UsercornEventDecoder: turns the UCIR op stream into backstep Events.
//
// Event model (docs/formats/usercorn.md has the reasons):
//   * One event per STEP: the ops of the instruction (MEM_READ/MEM_WRITE,
//     REG, in stream order), its STEP, and then the "tail" that follows it
//     up to the next instruction's first op: SYSCALL (the kernel's side
//     effects of a syscall instruction), MEM_MAP/UNMAP/PROT, NOPs, FRAME
//     headers and at most one JMP. Whatever a tail holds applies before the
//     next instruction.
//   * EXIT, and a SYSCALL holding EXIT, are the next instruction's: usercorn
//     appends them before the STEP of the exiting instruction. The event
//     holding EXIT is followed by a kMarker "exit" event.
//   * rip: STEP adds the instruction's size, a JMP sets it; the event
//     carries the composition as its last register write: a SET of the JMP
//     target when a JMP redirects, else an ADD of the size (the reader keeps
//     no register values, so a fall-through cannot be a SET).
//   * A JMP that no STEP precedes in its event completes an event of its
//     own (a rep iteration or a self-jump usercorn records as block entries
//     only, or a block of a block-only trace): its ops, then rip = target.
//   * A tail stops at a FRAME of another pid: the event's thread is
//     ThreadId(pid + 1) of the frame its STEP or JMP is in.
//   * backstep's signal SYSCALLs (usercorn_recording.h): an event holding
//     kUcirSignalDelivered + n is kInterrupt, described "signal n"; a
//     kUcirKilledBySignal + n (holding EXIT) is described "killed by signal
//     n"; a kUcirExec (a new image: execve) is described "exec HEX" (the
//     new executable's path); other SYSCALLs "syscall n(args) = result"
//     (event_notes.h).
//   * SYSCALL is decoded whole; nested FRAME, KEYFRAME, SYSCALL or STEP is
//     Corruption. A nested JMP just sets rip.
// MEM_READ carries no value: reads are dropped, unless set_reports_reads()
// (the keyframe declares that every read is recorded); they are then
// reported with placeholder (zero) data, at most kMaxMapZeroFill bytes.
// MEM_MAP zero-fills mappings of at most kMaxMapZeroFill bytes; MAP, UNMAP
// and PROT are named in the event's description, with syscalls.
//
// End of data (the end of the file, or a chunk or op it cuts): an event
// whose STEP or JMP was read is delivered; complete ops that follow and
// complete no event form a last kMarker event ("exit" when they hold EXIT,
// else "effects after the last instruction"). So a truncated file ends
// cleanly. Damage (CRC, unknown op, nesting) in a complete event's tail ends
// that event; the next call reports it.
//
// Thread-safety: one thread at a time (it drives one SnappyStream).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "backstep/core/event.h"
#include "backstep/core/expected.h"
#include "backstep/core/trace_reader.h"
#include "backstep/core/usercorn_registers.h"
#include "formats/usercorn/snappy_stream.h"
#include "formats/usercorn/usercorn_ops.h"

namespace backstep::core {

// The decoder's state at an event boundary: all a ReaderPosition holds.
struct UsercornCursor {
  SnappyPos pos;                 // next op
  std::uint32_t frame_left = 0;  // ops left in the enclosing frame; 0: top level
  std::uint64_t pid = 0;         // of the enclosing (or last) frame
  bool pending_exit = false;     // an "exit" marker event comes first
  bool operator==(const UsercornCursor&) const = default;
};

// Packing (usercorn_format.h): REQUIRES pos.chunk < kMaxFileSize, pid <=
// kMaxPid. Decode returns nullopt for values no cursor packs to.
ReaderPosition EncodeUsercornCursor(const UsercornCursor& cursor);
std::optional<UsercornCursor> DecodeUsercornCursor(const ReaderPosition& position);

ThreadId UsercornThread(std::uint64_t pid);

class UsercornEventDecoder {
 public:
  // `stream` must outlive the decoder.
  UsercornEventDecoder(SnappyStream* stream, const UsercornArch& arch);

  struct Prologue {
    std::optional<Address> pc;  // the first JMP's target
    std::uint64_t pid = 0;      // pid of the frame holding it
  };
  // From *at (just after the keyframe), absorbs what precedes the first
  // instruction: NOPs, FRAME headers and the first JMP. Leaves *at at the
  // first event's boundary.
  Expected<Prologue> ReadPrologue(UsercornCursor* at);

  // Decodes the event at boundary *at into *event and moves *at to the next
  // boundary. False (and *at unchanged) at the end of the data. Corruption
  // (or Unsupported past backstep's limits) names the file and the op's
  // stream position; *at is then unchanged too.
  Expected<bool> Next(UsercornCursor* at, Event* event);
  void set_reports_reads(bool on) { reports_reads_ = on; }

 private:
  enum class Rip : unsigned char { kNone, kAdd, kSet };
  struct Work {
    Event* event = nullptr;
    std::uint64_t pid = 0;  // thread of the event
    bool content = false;   // an op besides NOPs and frame headers
    bool complete = false;  // its STEP or JMP was read: the tail follows
    bool jmp = false;       // a JMP completed it or was absorbed
    bool exit = false;
    int signal = 0;  // delivered (kUcirSignalDelivered): the event is kInterrupt
    Rip rip = Rip::kNone;
    std::uint64_t rip_value = 0;
  };
  struct PendingWrite {
    Address address;
    std::size_t offset;  // in arena_, or SIZE_MAX for zeros
    std::uint64_t size;
  };

  // Whether the tail of a complete event takes the op of `type` next.
  Expected<bool> TailAbsorbs(std::uint8_t type, const Work& w);
  // Reads the SYSCALL at the stream's position and comes back.
  Expected<bool> SyscallHoldsExit();
  // Reads and applies one op (a whole SYSCALL). *stop: it was a FRAME of
  // another pid in a tail, which belongs to the next event.
  Status Consume(UsercornCursor& c, Work& w, bool* stop);
  Status ConsumeSyscall(Work& w, SnappyPos at);
  Status Apply(const UcirOpFields& op, UsercornCursor& c, Work& w, bool nested, SnappyPos at);
  void ApplyRegister(std::uint16_t unicorn, std::span<const std::uint8_t> value, Work& w);
  void Describe(const std::string& text);
  void Finish(const Work& w, bool leftover);
  Status Corrupt(SnappyPos at, const std::string& what) const;
  Status CheckPid(std::uint64_t pid, SnappyPos at) const;

  SnappyStream* stream_;
  const UsercornArch* arch_;
  RegisterId pc_;
  UcirOpFields op_;
  std::vector<std::uint8_t> arena_;    // data of the current event's ops
  std::vector<std::uint8_t> scratch_;  // SyscallHoldsExit()'s
  std::vector<PendingWrite> writes_;
  std::string description_;
  bool reports_reads_ = false;
};

}  // namespace backstep::core
