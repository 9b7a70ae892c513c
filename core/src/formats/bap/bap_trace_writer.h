// BapTraceWriter: the generic TraceWriter for BAP frames (`backstep convert
// --to bap`), on top of BapWriter.
//
// What a converted trace holds (docs/formats/bap.md, "Writing"):
//   * Version 3, frame_architecture i386 with machine x86_64 (64) for the
//     x86-64 table, machine i386 (1) for the i386 table; a meta frame
//     naming backstep as the tracer.
//   * The initial state, without adding events (positions stay aligned):
//     each thread's known registers beyond its pc go in the pre-list of its
//     first std_frame (BapReader's initial registers; values before), and
//     the known bytes of the header's regions (at most kMaxInitialBytes) in
//     the pre-list of the trace's first std_frame, as memory operands
//     (reads, known back to position 0). bap-frames makes no event of a
//     key_frame, so a key frame cannot carry an initial state. A thread
//     with such a state whose first event is not an instruction is
//     Unsupported.
//   * Instructions: one std_frame (address = the thread's pc before it,
//     thread_id = ThreadId - 1). rawbytes = the event's read at the pc, if
//     any; other reads become pre-list memory operands, writes post-list
//     ones; a register the event sets to the value it already had goes to
//     the pre-list, any other register written to the post-list (value
//     after; names: the TCG plugin's, bap_registers.h). The pc after is
//     implied by the thread's next std_frame.
//   * Other events without effects: syscall_frame (number from a "syscall
//     N" description, else 0), exception_frame (interrupts and exceptions,
//     "exception N"), key_frame without values (markers). With effects: a
//     key_frame of the registers and memory they set (the kind is then not
//     kept; reads are dropped).
//   * Each thread's last std_frame (the last BapReader's look-ahead finds)
//     lists in its post-list every register its thread knew after it (pc
//     included): BapReader knows after it only what the frame lists.
// Unsupported: architectures other than x86-64 and i386, physical-memory traces, events that
// clear state, thread 0, a thread that does not exist at position 0 (BapReader gives every
// thread its first pc from position 0); registers BAP cannot name (st0..st7 are derived)
// and results of operations on unknown registers are dropped.
//
// Thread-safety: one thread at a time.
#pragma once

#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>

#include "backstep/core/trace_writer.h"
#include "formats/bap/bap_format.h"
#include "formats/bap/bap_registers.h"
#include "formats/bap/bap_writer.h"

namespace backstep::core {

class BapTraceWriter final : public TraceWriter {
 public:
  // Initial-image bytes a converted trace may carry in its key frame.
  static constexpr std::uint64_t kMaxInitialBytes = std::uint64_t{256} << 20;

  explicit BapTraceWriter(std::string path, BapWriterOptions options = {})
      : path_(std::move(path)), options_(options) {}
  // Writes into memory instead (tests, fuzz seeds); bytes() after Finish().
  static std::unique_ptr<BapTraceWriter> InMemory(BapWriterOptions options = {});

  Status Begin(const TraceHeader& header,
               const std::vector<std::pair<ThreadId, RegisterFile>>& initial_registers,
               const InitialMemoryFn& initial_memory) override;
  Status Append(const Event& event) override;
  Status Finish() override;

  const std::vector<std::uint8_t>& bytes() const { return writer_->bytes(); }

 private:
  Status CheckThread(ThreadId thread, const std::string& where) const;
  RegisterFile& State(ThreadId thread);
  void AddRegister(bap_proto::operand_value_list* list, RegisterId id, const RegisterFile& regs,
                   bool written);
  static void AddMemory(bap_proto::operand_value_list* list, const MemoryAccess& m, bool written);
  // A key frame of `thread` setting `registers` (their values in `regs`)
  // and `memory`.
  // Queues frame_ of `thread` (see window_).
  Status Emit(ThreadId thread);
  // Writes the oldest queued frame, completed when it is its thread's last.
  Status WriteOldest();
  Status AppendKeyFrame(ThreadId thread, const std::vector<RegisterId>& registers,
                        const RegisterFile& regs, std::span<const MemoryAccess> memory);

  std::string path_;
  BapWriterOptions options_;
  bool in_memory_ = false;
  const BapArch* arch_ = nullptr;
  std::unique_ptr<BapWriter> writer_;
  std::map<ThreadId, RegisterFile> state_;
  // Initial registers still to write, per thread (its first std_frame's
  // pre-list), and the initial image (the trace's first std_frame's).
  std::set<ThreadId> known_threads_;  // the threads of position 0
  std::map<ThreadId, std::vector<RegisterId>> initial_;
  std::vector<std::vector<std::uint8_t>> image_runs_;
  std::vector<MemoryAccess> image_;
  std::uint64_t events_ = 0;
  bap_proto::frame frame_;
  // Frames are written kWindow frames late (fewer than BapReader's
  // look-ahead): a std_frame leaving the window with no later frame of its
  // thread is the last one the reader finds, and BapReader knows after it
  // only what it lists, so WriteOldest() completes its post-list with every
  // register its thread knew after it. Memory: kWindow frames.
  static constexpr std::size_t kWindow = kBapLookahead - 64;
  struct Windowed {
    bap_proto::frame frame;
    ThreadId thread;
    std::uint64_t number;  // in the file
  };
  // Each thread's latest std_frame: its number, its thread's registers
  // after it once another event of the thread changes them (else the
  // thread's current ones), the registers already in its post-list.
  struct LastFrame {
    std::uint64_t frame = 0;
    std::optional<RegisterFile> after;
    std::vector<RegisterId> post;
  };
  std::deque<Windowed> window_;
  std::map<ThreadId, LastFrame> last_;
  std::uint64_t next_frame_ = 0;
};

}  // namespace backstep::core
