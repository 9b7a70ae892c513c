#include "formats/reven/reven_writer.h"

#include <algorithm>

#include "formats/reven/reven_format.h"

namespace backstep::core {
namespace {
constexpr std::size_t kFlushBytes = 1 << 20;
}  // namespace

RevenWriter::RevenWriter(RevenMachine machine, RevenWriterOptions options)
    : machine_(std::move(machine)),
      options_(std::move(options)),
      sizes_(0x10000, 0),
      operations_(0x100, false) {
  for (const RevenRegisterDecl& r : machine_.registers) sizes_[r.id] = r.size;
  for (const RevenOperationDecl& op : machine_.operations) operations_[op.id] = true;
}

Expected<std::unique_ptr<RevenWriter>> RevenWriter::CreateFile(const std::string& path,
                                                               RevenMachine machine,
                                                               RevenWriterOptions options) {
  std::unique_ptr<RevenWriter> w(new RevenWriter(std::move(machine), std::move(options)));
  BACKSTEP_ASSIGN_OR_RETURN(AtomicFile file, AtomicFile::Create(path));
  w->file_.emplace(std::move(file));
  BACKSTEP_RETURN_IF_ERROR(w->WriteLeadingSections());
  return w;
}

std::unique_ptr<RevenWriter> RevenWriter::CreateMemory(RevenMachine machine,
                                                       RevenWriterOptions options) {
  std::unique_ptr<RevenWriter> w(new RevenWriter(std::move(machine), std::move(options)));
  w->status_ = w->WriteLeadingSections();
  return w;
}

Status RevenWriter::WriteLeadingSections() {
  options_.metadata.resource_type = kRevenResourceTraceBin;
  BACKSTEP_RETURN_IF_ERROR(AppendRevenMetadata(options_.metadata, &buf_));
  std::uint64_t start = OpenSection();
  buf_.push_back(options_.compression);
  CloseSection(start);
  start = OpenSection();
  BACKSTEP_RETURN_IF_ERROR(AppendRevenMachine(machine_, &buf_));
  CloseSection(start);
  section_start_ = OpenSection();  // initial memory
  return Status::Ok();
}

void RevenWriter::Fail(std::string what) {
  if (status_.ok()) status_ = Status::InvalidArgument("RevenWriter: " + what);
}

// `bytes` is 1..8 for valid machines; an invalid PHY_SIZE written on
// purpose (tests) is clamped here rather than overflowing `b`.
void RevenWriter::AppendLe(std::uint64_t v, int bytes) {
  std::uint8_t b[8];
  bytes = std::clamp(bytes, 0, 8);
  for (int i = 0; i < bytes; ++i) b[i] = static_cast<std::uint8_t>(v >> (8 * i));
  Append(b, static_cast<std::size_t>(bytes));
}

// Counts and sizes are known only later (the reference writer patches them
// too). Usually the bytes are still in the buffer; a file write-back is the
// rare case of a section larger than the flush threshold.
void RevenWriter::Patch(std::uint64_t at, std::uint64_t v, int bytes) {
  for (int i = 0; i < bytes; ++i) {
    const auto b = static_cast<std::uint8_t>(v >> (8 * i));
    if (at + i >= flushed_) {
      buf_[at + i - flushed_] = b;
    } else {
      file_->WriteAt(at + i, std::span<const std::uint8_t>(&b, 1));
    }
  }
}

// Flushes only between events (and initial memory pieces), so the open
// chunk's count byte is almost always still in memory when it is patched.
void RevenWriter::MaybeFlush() {
  if (!file_ || buf_.size() < kFlushBytes) return;
  file_->Write(buf_);
  flushed_ += buf_.size();
  buf_.clear();
}

std::uint64_t RevenWriter::OpenSection() {
  const std::uint64_t start = size();
  AppendLe(0, 8);
  return start;
}

void RevenWriter::CloseSection(std::uint64_t start) {
  buf_.insert(buf_.end(), options_.section_padding, 0);
  Patch(start, size() - start - 8, 8);
}

void RevenWriter::EnterPhase(Phase phase) {
  if (phase_ == phase) return;
  if (phase < phase_) return Fail("sections written out of order");
  if (in_event_) return Fail("Finish() inside an event");
  while (phase_ < phase) {
    switch (phase_) {
      case Phase::kMemory:
        // No padding here: the section's size must equal the regions' total.
        Patch(section_start_, size() - section_start_ - 8, 8);
        section_start_ = OpenSection();
        initial_count_at_ = size();
        AppendLe(0, 4);
        break;
      case Phase::kRegisters:
        Patch(initial_count_at_, initial_count_, 4);
        CloseSection(section_start_);
        section_start_ = OpenSection();
        events_payload_ = size();
        AppendLe(0, 8);  // event_count, patched by Finish()
        break;
      case Phase::kEvents:
        // Padding only with a patched count: a scanning reader would decode
        // it as events.
        if (options_.patch_event_count) {
          Patch(events_payload_, event_count_, 8);
          CloseSection(section_start_);
        }
        break;
      case Phase::kDone:
        break;
    }
    phase_ = static_cast<Phase>(static_cast<int>(phase_) + 1);
  }
}

void RevenWriter::WriteInitialMemory(std::span<const std::uint8_t> bytes) {
  if (phase_ != Phase::kMemory) return Fail("initial memory after the registers");
  buf_.insert(buf_.end(), bytes.begin(), bytes.end());
  MaybeFlush();
}

void RevenWriter::WriteInitialRegister(std::uint16_t id, std::span<const std::uint8_t> value) {
  EnterPhase(Phase::kRegisters);
  if (phase_ != Phase::kRegisters) return Fail("initial register after the events");
  if (value.size() != sizes_[id]) {
    return Fail("initial register " + std::to_string(id) + ": wrong size or undeclared");
  }
  AppendLe(id, 2);
  Append(value.data(), value.size());
  ++initial_count_;
}

std::uint64_t RevenWriter::events_offset() {
  EnterPhase(Phase::kEvents);
  return size() - events_payload_;
}

void RevenWriter::StartChunk() {
  count_byte_at_ = size();
  buf_.push_back(0);
  mem_ = regs_ = 0;
}

void RevenWriter::CloseChunk() {
  const std::uint64_t byte = (regs_ << 4) | mem_;
  if (count_byte_at_ >= flushed_) {
    buf_[count_byte_at_ - flushed_] = static_cast<std::uint8_t>(byte);
  } else {
    Patch(count_byte_at_, byte, 1);
  }
}

void RevenWriter::BeginInstruction() {
  if (phase_ != Phase::kEvents) EnterPhase(Phase::kEvents);
  if (in_event_) return Fail("event begun inside an event");
  in_event_ = true;
  StartChunk();
}

void RevenWriter::BeginOther(std::string_view description) {
  if (phase_ != Phase::kEvents) EnterPhase(Phase::kEvents);
  if (in_event_) return Fail("event begun inside an event");
  if (description.size() > 0xff) return Fail("event description over 255 bytes");
  buf_.push_back(kRevenNotInstruction);
  buf_.push_back(kRevenEventTypeOther);
  buf_.push_back(static_cast<std::uint8_t>(description.size()));
  Append(description.data(), description.size());
  BeginInstruction();
}

// The continuation rule mirrors the reference writer exactly: the 15th
// entry of a kind closes the chunk with nibble 0xF (holding 14) and opens a
// new count byte, so the bytes match what PANDA and Bochs write.
void RevenWriter::WriteMemory(std::uint64_t address, std::span<const std::uint8_t> data) {
  if (!in_event_) return Fail("memory write outside an event");
  if (regs_ != 0) return Fail("memory write after a register write in the same chunk");
  if (++mem_ == kRevenContinuationNibble) {
    CloseChunk();
    StartChunk();
    mem_ = 1;
  }
  const int phy = machine_.phy_size;
  AppendLe(address, phy);
  if (data.size() < kRevenLengthEscape) {
    buf_.push_back(static_cast<std::uint8_t>(data.size()));
  } else {
    buf_.push_back(kRevenLengthEscape);
    AppendLe(data.size(), phy);
  }
  Append(data.data(), data.size());
}

void RevenWriter::WriteRegister(std::uint16_t id, std::span<const std::uint8_t> value) {
  if (!in_event_) return Fail("register write outside an event");
  if (value.size() != sizes_[id]) {
    return Fail("register " + std::to_string(id) + ": wrong size or undeclared");
  }
  if (++regs_ == kRevenContinuationNibble) {
    CloseChunk();
    StartChunk();
    regs_ = 1;
  }
  if (id < kRevenRegisterIdEscape) {
    buf_.push_back(static_cast<std::uint8_t>(id));
  } else {
    buf_.push_back(kRevenRegisterIdEscape);
    AppendLe(id, 2);
  }
  Append(value.data(), value.size());
}

void RevenWriter::WriteOperation(std::uint8_t op_id) {
  if (!in_event_) return Fail("operation outside an event");
  if (!operations_[op_id]) return Fail("operation " + std::to_string(op_id) + " undeclared");
  if (++regs_ == kRevenContinuationNibble) {
    CloseChunk();
    StartChunk();
    regs_ = 1;
  }
  buf_.push_back(op_id);
}

void RevenWriter::EndEvent() {
  if (!in_event_) return Fail("EndEvent() outside an event");
  CloseChunk();
  in_event_ = false;
  ++event_count_;
  MaybeFlush();
}

void RevenWriter::WriteRaw(std::span<const std::uint8_t> bytes) {
  buf_.insert(buf_.end(), bytes.begin(), bytes.end());
}

Status RevenWriter::Finish() {
  EnterPhase(Phase::kDone);
  if (!status_.ok()) return status_;
  if (!file_) return Status::Ok();
  file_->Write(buf_);
  flushed_ += buf_.size();
  buf_.clear();
  return file_->Commit();
}

}  // namespace backstep::core
