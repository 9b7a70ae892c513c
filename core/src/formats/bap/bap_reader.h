// BapReader: the TraceReader for BAP `frames` traces (bap_format.h for the
// container, docs/formats/bap.md for the mapping and its reasons).
//
// Open() parses the container (bap_container.h), resolves the architecture
// (x86-64 and i386; other frame_architecture values are Unsupported "not
// supported yet: ARCH") and scans the first kBapLookahead frames, reading
// only each std_frame's address and thread, for each thread's first pc.
//
// Events, one per frame:
//   * std_frame: an instruction of ThreadId(thread_id + 1). Reads: the
//     instruction bytes at `address`, then the pre-list's memory operands
//     (values seen before it). Register writes: the pre-list's registers
//     (values before, now known), the post-list's (values after), then,
//     since a suspended thread's registers do not change, the pre-list
//     registers of the thread's next std_frame (values before it) and the
//     pc: that frame's address, looked up at most kBapLookahead frames
//     ahead. Without one (the thread's last instruction) the event clears
//     the thread's registers first: only what the frame lists is known
//     after it (legacy traces have no pc operand: the pc is unknown).
//     Writes: the post-list's memory operands.
//   * syscall_frame: a syscall event, "syscall N (args ...)", no effects.
//   * exception_frame: an exception event "exception N ..."; its thread, or
//     the trace's first thread when it names none.
//   * taint_intro_frame: a marker "taint intro" writing each value given.
//   * modload_frame: a marker "modload NAME [lo, hi)".
//   * key_frame: a marker "key frame" setting the registers and memory it
//     lists for its thread (one thread per key frame, else Unsupported).
// Register operands with names outside the mapping (bap_registers.h) are
// skipped. Initial state: per thread met in the scan, the pc of its first
// std_frame and the registers that frame's pre-list reads (the values
// before it); no memory. Partial state is the point: what no frame touched
// stays unknown.
//
// Header: format "bap", virtual addresses, records_reads true, declared
// events = the header's frame count n (when not 0), no regions;
// properties: version, architecture, meta frame fields, TOC summary.
// ResumePoints(): none. A TOC entry is only a file offset: BAP frames carry
// the registers an instruction touched, never a thread's full state, so
// the registers at a TOC entry are known only by replaying every frame
// before it (docs/formats/bap.md).
//
// ReaderPosition: offset = the next frame's length field, aux = its index.
//
// Thread-safety: as TraceReader.
#pragma once

#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "backstep/core/trace_reader.h"
#include "formats/bap/bap_container.h"
#include "formats/bap/bap_registers.h"

namespace backstep::core {

class BapReader final : public TraceReader {
 public:
  // The registry entry (formats/format_entry.h).
  static constexpr std::string_view kFormatName = "bap";
  static constexpr std::string_view kFormatDescription =
      "BAP frames trace (protobuf frames in BAP's container)";
  static bool Sniff(std::span<const std::uint8_t> head);

  // Corruption (header, meta frame, TOC) naming the file and offset, or
  // Unsupported (version, architecture).
  static Expected<std::unique_ptr<BapReader>> Open(std::shared_ptr<const ByteSource> source);

  const TraceHeader& header() const override { return header_; }
  const ByteSource& source() const override { return *source_; }
  std::vector<std::pair<ThreadId, RegisterFile>> InitialRegisters() const override {
    return initial_;
  }
  void ReadInitialMemory(Address, std::span<std::uint8_t> out,
                         std::span<std::uint8_t> known) const override;
  ReaderPosition Tell() const override { return {offset_, index_}; }
  // InvalidArgument for a position outside the frames region.
  Status Seek(const ReaderPosition& pos) override;
  Expected<bool> Next(Event* event) override;

  const BapContainer& container() const { return container_; }
  const BapArch& bap_arch() const { return *arch_; }

 private:
  explicit BapReader(std::shared_ptr<const ByteSource> source) : source_(std::move(source)) {}
  void ScanFirstThreads();
  void FillHeader();
  // The thread of a frame's thread_id; Unsupported past kBapMaxThreadId.
  Expected<ThreadId> Thread(std::uint64_t thread_id) const;
  Status StdFrame(const bap_proto::std_frame& f, Event* event);
  Status KeyFrame(const bap_proto::key_frame& f, Event* event);
  // Appends a register write of `value` (little-endian, zero-extended or
  // cut to the register's size) if `name` is mapped.
  void AddRegister(const std::string& name, const std::string& value, Event* event);
  Status AddMemory(std::uint64_t address, const std::string& value, std::int32_t bit_length,
                   std::vector<MemoryAccess>* out);
  // Decodes into ahead_ the next std_frame of `thread_id` after the
  // current frame: false if none lies within kBapLookahead frames.
  Expected<bool> NextFrame(std::uint64_t thread_id);
  // Appends the register operands of `f`'s pre-list.
  void AddPreRegisters(const bap_proto::std_frame& f, Event* event);
  std::string Where() const;

  std::shared_ptr<const ByteSource> source_;
  BapContainer container_;
  const BapArch* arch_ = nullptr;
  TraceHeader header_;
  std::vector<std::pair<ThreadId, RegisterFile>> initial_;
  ThreadId first_thread_{1};
  std::uint64_t offset_ = 0, index_ = 0;  // next frame
  std::uint64_t frame_offset_ = 0;        // the frame being decoded
  std::uint64_t next_offset_ = 0;         // after it
  bap_proto::frame frame_;                // the event's data points into it
  bap_proto::peek_frame peek_;            // look-ahead
  bap_proto::frame ahead_;                // the thread's next std_frame
  std::string description_;
};

}  // namespace backstep::core
