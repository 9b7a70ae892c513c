// RevenWriter: writes rvnbintrace v1 traces with byte-exact control.
//
// The low-level writer behind the generic converter (reven_trace_writer.h),
// the synthetic trace generator and the tests. It writes what it is told:
// the machine (register ids, operations, PHY_SIZE, regions), the metadata
// (version 0 or 1, tool name), section padding, events entry by entry, and
// it may leave event_count at 0 like a producer that died. It encodes events
// exactly as REVEN's own writer does: memory entries before register entries
// in a chunk, and when a count reaches 15 the chunk is closed with nibble
// 0xF (14 entries) and a continuation count byte opens.
//
// It does not validate the machine (tests write invalid ones on purpose);
// it does check what it encodes: value sizes against declared sizes,
// operation ids against declared operations, memory after registers in a
// chunk. Such mistakes are sticky: status() and Finish() report the first.
//
// Order of calls: [WriteInitialMemory...] [WriteInitialRegister...]
// [events...] Finish(). Each phase closes the previous section.
//
// Thread-safety: one thread at a time.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "backstep/core/expected.h"
#include "formats/reven/reven_container.h"
#include "formats/reven/reven_machine.h"
#include "util/atomic_file.h"

namespace backstep::core {

struct RevenWriterOptions {
  RevenMetadata metadata;
  std::uint8_t compression = 0;  // written as is (readers want 0)
  // Zero bytes appended inside every section that allows it (not initial
  // memory, whose size is fixed; not events when event_count stays 0).
  std::uint32_t section_padding = 0;
  // false: leave event_count and the events section's size at 0, as a
  // producer that never finished does.
  bool patch_event_count = true;
};

class RevenWriter {
 public:
  // Writes to `path` atomically (on Finish()).
  static Expected<std::unique_ptr<RevenWriter>> CreateFile(const std::string& path,
                                                           RevenMachine machine,
                                                           RevenWriterOptions options = {});
  // Writes to memory; TakeBytes() after Finish().
  static std::unique_ptr<RevenWriter> CreateMemory(RevenMachine machine,
                                                   RevenWriterOptions options = {});

  // Initial memory: the regions' bytes in declaration order, in any number
  // of pieces (the section holds what is given, even if it mismatches).
  void WriteInitialMemory(std::span<const std::uint8_t> bytes);
  // One initial register value (declared size).
  void WriteInitialRegister(std::uint16_t id, std::span<const std::uint8_t> value);

  // Events: Begin*, entries, EndEvent().
  void BeginInstruction();
  void BeginOther(std::string_view description);
  void WriteMemory(std::uint64_t address, std::span<const std::uint8_t> data);
  // Ids >= 0xff use the 3-byte escape.
  void WriteRegister(std::uint16_t id, std::span<const std::uint8_t> value);
  void WriteOperation(std::uint8_t op_id);
  void EndEvent();
  // Appends bytes as they are to the current section (tests: invalid events).
  void WriteRaw(std::span<const std::uint8_t> bytes);

  // Offset of the next event from the start of the events payload (its
  // event_count field), as trace.cache records it. Opens the events section.
  std::uint64_t events_offset();
  std::uint64_t event_count() const { return event_count_; }
  Status status() const { return status_; }

  // Closes the sections, patches event_count, commits the file.
  Status Finish();
  // Memory mode, after Finish(): the file's bytes.
  std::vector<std::uint8_t> TakeBytes() { return std::move(buf_); }

 private:
  enum class Phase { kMemory, kRegisters, kEvents, kDone };

  RevenWriter(RevenMachine machine, RevenWriterOptions options);
  Status WriteLeadingSections();
  void Fail(std::string what);
  void Append(const void* p, std::size_t n) {
    const auto* b = static_cast<const std::uint8_t*>(p);
    buf_.insert(buf_.end(), b, b + n);
  }
  void AppendLe(std::uint64_t v, int bytes);
  void Patch(std::uint64_t at, std::uint64_t v, int bytes);
  std::uint64_t size() const { return flushed_ + buf_.size(); }
  void MaybeFlush();
  std::uint64_t OpenSection();
  void CloseSection(std::uint64_t start);
  void EnterPhase(Phase phase);
  void StartChunk();
  void CloseChunk();
  std::uint16_t RegisterSize(std::uint16_t id) const;

  RevenMachine machine_;
  RevenWriterOptions options_;
  std::optional<AtomicFile> file_;
  std::vector<std::uint8_t> buf_;  // unflushed bytes (everything in memory mode)
  std::uint64_t flushed_ = 0;
  Status status_;
  Phase phase_ = Phase::kMemory;
  std::uint64_t section_start_ = 0;  // offset of the open section's size field
  std::uint64_t initial_count_at_ = 0;
  std::uint32_t initial_count_ = 0;
  std::uint64_t events_payload_ = 0;
  std::uint64_t event_count_ = 0;
  bool in_event_ = false;
  std::uint64_t count_byte_at_ = 0;
  unsigned mem_ = 0, regs_ = 0;
  std::vector<std::uint16_t> sizes_;  // register id -> size (0: undeclared)
  std::vector<bool> operations_;      // op id -> declared
};

}  // namespace backstep::core
