#include "formats/reven/reven_events.h"

#include <algorithm>

#include "formats/reven/reven_container.h"
#include "formats/reven/reven_format.h"
#include "util/hex.h"

namespace backstep::core {
namespace {

constexpr std::string_view kEventsSection = "events";

std::string_view OperatorName(std::uint8_t op) {
  static constexpr std::string_view kNames[] = {"SET", "ADD", "AND", "OR"};
  return op <= kRevenMaxOperator ? kNames[op] : "?";
}

// Exception names of docs/formats/reven.md §1.6 (Bochs may append " with error code N").
constexpr std::string_view kExceptions[] = {
    "divide error",
    "debug",
    "nmi interrupt",
    "breakpoint",
    "overflow",
    "bound range exceeded",
    "invalid opcode",
    "device not available",
    "double fault",
    "coprocessor segment overrun",
    "invalid tss",
    "segment not present",
    "stack segment fault",
    "general protection",
    "page fault",
    "floating-point error",
    "alignment check",
    "machine check",
    "unknown exception",
};

// `s` is `word` or starts with `word` followed by a space.
bool IsWord(std::string_view s, std::string_view word) {
  return s.starts_with(word) && (s.size() == word.size() || s[word.size()] == ' ');
}

}  // namespace

Expected<RevenEventDecoder> RevenEventDecoder::Create(const RevenMachine& machine,
                                                      const std::string& file,
                                                      std::vector<std::string>* unmapped) {
  RevenEventDecoder d;
  d.file_ = &file;
  d.phy_size_ = machine.phy_size;
  std::uint32_t max_id = 0;
  bool panda_x87 = false;
  for (const RevenRegisterDecl& r : machine.registers) {
    max_id = std::max<std::uint32_t>(max_id, r.id);
    panda_x87 = panda_x87 || r.name == "top";
  }
  for (const RevenOperationDecl& op : machine.operations) {
    max_id = std::max<std::uint32_t>(max_id, op.id);
  }
  // A flat table indexed by id (at most 64 Ki slots): decoding a register
  // entry is one bounds check and one load, no hashing.
  d.slots_.resize(max_id + 1);
  d.names_.reserve(machine.registers.size());
  for (const RevenRegisterDecl& r : machine.registers) {
    Slot& s = d.slots_[r.id];
    s.kind = SlotKind::kRegister;
    s.size = r.size;
    s.first = static_cast<std::uint32_t>(d.names_.size());
    s.mapping = MapRevenRegister(r.name, r.size, panda_x87);
    d.names_.push_back(r.name);
    if (s.mapping.conversion == RevenConversion::kUnmapped) unmapped->push_back(r.name);
    if (s.mapping.conversion == RevenConversion::kStatusNoTop ||
        s.mapping.conversion == RevenConversion::kTop) {
      d.needs_fstat_base_ = true;
    }
  }
  // Operations are converted once, here: an event then copies ready-made
  // canonical writes. SET operands go through the same conversion as values;
  // ADD/AND/OR stay operations for the consumer (the reader is stateless).
  for (const RevenOperationDecl& op : machine.operations) {
    const Slot target = d.slots_[op.reg];  // validated by ParseRevenMachine
    Slot& s = d.slots_[op.id];
    s.kind = SlotKind::kOperation;
    s.first = static_cast<std::uint32_t>(d.op_writes_.size());
    if (op.op == static_cast<std::uint8_t>(RegisterOp::kSet)) {
      AppendRevenValue(target.mapping, op.operand, &d.op_writes_);
    } else if (!RevenOperationAllowed(target.mapping)) {
      return Status::Unsupported(file + ": machine description at offset " +
                                 HexU64(op.file_offset) + ": register operation " +
                                 std::to_string(op.id) + " (" + std::string(OperatorName(op.op)) +
                                 ") targets register \"" + d.names_[target.first] +
                                 "\", which backstep converts; it can only SET it");
    } else if (target.mapping.conversion == RevenConversion::kDirect) {
      RegisterWrite& w = d.op_writes_.emplace_back();
      w.reg = target.mapping.target[0];
      w.op = static_cast<RegisterOp>(op.op);
      std::copy_n(op.operand.begin(), std::min<std::size_t>(op.operand.size(), 64), w.value);
    }
    s.count = static_cast<std::uint32_t>(d.op_writes_.size() - s.first);
  }
  return d;
}

Status RevenEventDecoder::DecodeRegisterSet(ByteReader& r, std::uint64_t count, bool sized,
                                            const std::string& file, std::string_view section,
                                            std::vector<RegisterWrite>* out) const {
  // Checked before the loop so that an absurd count fails at once.
  const std::uint64_t entry_min = sized ? 5 : 3;
  if (count > r.remaining() / entry_min) {
    return RevenCorruption(file, section, r.offset(),
                           std::to_string(count) + " register values cannot fit in the " +
                               std::to_string(r.remaining()) + " bytes left");
  }
  std::vector<bool> seen(slots_.size());
  for (std::uint64_t i = 0; i < count; ++i) {
    const std::uint64_t at = r.offset();
    const std::uint16_t id = r.U16();
    const std::uint16_t size = sized ? r.U16() : 0;
    if (!r.ok()) return RevenCorruption(file, section, at, "section ends inside a value");
    const Slot* s = id < slots_.size() ? &slots_[id] : nullptr;
    if (s == nullptr || s->kind != SlotKind::kRegister) {
      return RevenCorruption(
          file, section, at,
          (s && s->kind == SlotKind::kOperation ? "operation id " : "undeclared register id ") +
              std::to_string(id) + " where a register value is expected");
    }
    if (sized && size != s->size) {
      return RevenCorruption(file, section, at,
                             "register \"" + names_[s->first] + "\" has " + std::to_string(size) +
                                 " bytes, declared " + std::to_string(s->size));
    }
    if (seen[id]) {
      return RevenCorruption(file, section, at,
                             "register \"" + names_[s->first] + "\" appears twice");
    }
    seen[id] = true;
    auto value = r.Bytes(s->size);
    if (!r.ok()) return RevenCorruption(file, section, at, "section ends inside a value");
    AppendRevenValue(s->mapping, value, out);
  }
  for (std::size_t id = 0; id < slots_.size(); ++id) {
    if (slots_[id].kind == SlotKind::kRegister && !seen[id]) {
      return RevenCorruption(file, section, r.offset(),
                             "register \"" + names_[slots_[id].first] + "\" (id " +
                                 std::to_string(id) + ") has no value");
    }
  }
  return Status::Ok();
}

Status RevenEventDecoder::EventError(const ByteReader& r, std::uint64_t start, std::uint64_t number,
                                     std::string_view what) const {
  return RevenCorruption(*file_, kEventsSection, r.offset(),
                         "event " + std::to_string(number) + " (starting at " + HexU64(start) +
                             "): " + std::string(what));
}

// OutOfRange, not Corruption: the reader decides. A trace whose producer
// died (event_count 0) legitimately ends inside an event.
Status RevenEventDecoder::Cut(std::uint64_t start, std::uint64_t number) const {
  return Status::OutOfRange(*file_ + ": events at offset " + HexU64(start) + ": event " +
                            std::to_string(number) + " is cut short by the end of the section");
}

Status RevenEventDecoder::Decode(ByteReader& r, std::uint64_t number, Event* e) const {
  const std::uint64_t start = r.offset();
  if (r.PeekU8() == kRevenNotInstruction) {
    r.U8();
    const std::uint8_t type = r.U8();
    if (!r.ok()) return Cut(start, number);
    if (type != kRevenEventTypeOther) {
      return EventError(r, start, number, "unknown event type " + HexU64(type));
    }
    e->description = r.String(r.U8());
    if (!r.ok()) return Cut(start, number);
    e->kind = Classify(e->description);
    if (r.PeekU8() == 0xff && r.remaining() != 0) {
      return EventError(r, start, number, "diff count byte 0xff after the description");
    }
  }
  return DecodeDiff(r, start, number, e);
}

Status RevenEventDecoder::DecodeDiff(ByteReader& r, std::uint64_t start, std::uint64_t number,
                                     Event* e) const {
  std::uint8_t count = r.U8();
  for (;;) {
    if (!r.ok()) return Cut(start, number);
    const unsigned m = count & 0xf, n = count >> 4;
    const unsigned mem = m == kRevenContinuationNibble ? kRevenEntriesPerFullChunk : m;
    const unsigned regs = n == kRevenContinuationNibble ? kRevenEntriesPerFullChunk : n;
    for (unsigned i = 0; i < mem; ++i) {
      const Address address = r.Le(phy_size_);
      std::uint64_t length = r.U8();
      if (length == kRevenLengthEscape) length = r.Le(phy_size_);
      auto data = r.Bytes(length);
      if (!r.ok()) return Cut(start, number);
      // Consumers compute address + length: a write that wraps past 2^64
      // would break every range check downstream.
      if (length != 0 && length - 1 > ~address) {
        return EventError(r, start, number,
                          "memory write at " + HexU64(address) + " wraps past 2^64");
      }
      e->writes.push_back(MemoryAccess{address, data});
    }
    for (unsigned i = 0; i < regs; ++i) {
      std::uint32_t id = r.U8();
      if (id == kRevenRegisterIdEscape) id = r.U16();
      if (!r.ok()) return Cut(start, number);
      const Slot* s = id < slots_.size() ? &slots_[id] : nullptr;
      if (s != nullptr && s->kind == SlotKind::kRegister) {
        auto value = r.Bytes(s->size);
        if (!r.ok()) return Cut(start, number);
        AppendRevenValue(s->mapping, value, &e->registers);
      } else if (s != nullptr && s->kind == SlotKind::kOperation) {
        e->registers.insert(e->registers.end(), op_writes_.begin() + s->first,
                            op_writes_.begin() + s->first + s->count);
      } else {
        return EventError(r, start, number,
                          "register or operation id " + std::to_string(id) + " is not declared");
      }
    }
    // Nibble 0xF in either half: 14 entries here, and the event goes on in
    // another chunk (docs/formats/reven.md §1.3). 0xFF would be ambiguous: invalid.
    if (m != kRevenContinuationNibble && n != kRevenContinuationNibble) return Status::Ok();
    count = r.U8();
    if (r.ok() && count == 0xff) {
      return EventError(r, start, number, "continuation count byte 0xff");
    }
  }
}

// Descriptions are the producers' own strings (docs/formats/reven.md §1.6); anything
// we do not recognise stays a marker with its text, nothing is lost.
EventKind RevenEventDecoder::Classify(std::string_view d) {
  if (d.starts_with("interrupt ") || d.starts_with("hw interrupt ")) return EventKind::kInterrupt;
  for (std::string_view name : kExceptions) {
    if (IsWord(d, name)) return EventKind::kException;
  }
  return EventKind::kMarker;
}

}  // namespace backstep::core
