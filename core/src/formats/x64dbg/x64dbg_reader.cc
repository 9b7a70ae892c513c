#include "formats/x64dbg/x64dbg_reader.h"

#include <algorithm>
#include <cstring>
#include <nlohmann/json.hpp>

#include "formats/x64dbg/x64dbg_format.h"
#include "util/byte_reader.h"
#include "util/hex.h"

namespace backstep::core {
namespace {

std::string JsonString(const nlohmann::json& j, const char* key) {
  auto it = j.find(key);
  return it != j.end() && it->is_string() ? it->get<std::string>() : std::string();
}

}  // namespace

Expected<std::unique_ptr<X64dbgReader>> X64dbgReader::Open(
    std::shared_ptr<const ByteSource> source) {
  const std::string& name = source->name();
  auto data = source->data();
  ByteReader r(data);
  auto magic = r.Bytes(4);
  const std::uint32_t json_size = r.U32();
  if (!r.ok()) {
    return Status::Corruption(name + ": offset 0x0: " + std::to_string(data.size()) +
                              " bytes, too short for an x64dbg trace header (8 bytes)");
  }
  if (std::memcmp(magic.data(), kX64dbgMagic, 4) != 0) {
    return Status::Corruption(name + ": offset 0x0: not an x64dbg trace (magic is not \"TRAC\")");
  }
  if (json_size > kX64dbgMaxJsonSize) {
    return Status::Corruption(name + ": offset 0x4: JSON header of " + std::to_string(json_size) +
                              " bytes (x64dbg accepts at most " +
                              std::to_string(kX64dbgMaxJsonSize) + ")");
  }
  auto text = r.String(json_size);
  if (!r.ok()) {
    return Status::Corruption(name + ": offset 0x8: JSON header of " + std::to_string(json_size) +
                              " bytes, but the file ends at offset " + HexU64(data.size()));
  }
  nlohmann::json json;
  try {
    json = nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    return Status::Corruption(name + ": offset 0x8: the header is not valid JSON (" + e.what() +
                              ")");
  }
  if (!json.is_object()) {
    return Status::Corruption(name + ": offset 0x8: the JSON header is not an object");
  }
  auto field = [&](const char* key) -> Expected<const nlohmann::json*> {
    auto it = json.find(key);
    if (it == json.end()) {
      return Status::Corruption(name + ": offset 0x8: the JSON header has no \"" + key + "\"");
    }
    return &*it;
  };
  BACKSTEP_ASSIGN_OR_RETURN(const nlohmann::json* ver, field("ver"));
  if (!ver->is_number_integer()) {
    return Status::Corruption(name + ": offset 0x8: header \"ver\" is not an integer");
  }
  if (ver->get<std::int64_t>() != 1) {
    return Status::Unsupported(name + ": x64dbg trace version " + ver->dump() +
                               " (only version 1 exists)");
  }
  BACKSTEP_ASSIGN_OR_RETURN(const nlohmann::json* arch, field("arch"));
  const std::string arch_name = arch->is_string() ? arch->get<std::string>() : arch->dump();
  const X64dbgDumpLayout* layout = nullptr;
  if (arch_name == "x64") {
    layout = &X64dbgDumpLayout::X64();
  } else if (arch_name == "x86") {
    auto x86 = X64dbgDumpLayout::X86();
    if (!x86.ok()) return x86.status().Annotate(name);
    layout = *x86;
  } else {
    return Status::Corruption(name + ": offset 0x8: header \"arch\" is " + arch->dump() +
                              " (x64dbg writes \"x64\" or \"x86\")");
  }
  if (auto it = json.find("compression"); it != json.end()) {
    if (!it->is_string()) {
      return Status::Corruption(name + ": offset 0x8: header \"compression\" is not a string");
    }
    if (!it->get<std::string>().empty()) {
      return Status::Unsupported(name + ": compression " + it->dump() +
                                 " (x64dbg writes uncompressed traces only)");
    }
  }
  std::unique_ptr<X64dbgReader> reader(new X64dbgReader(std::move(source), layout));
  TraceHeader& h = reader->header_;
  h.format = "x64dbg";
  h.arch = &layout->arch();
  h.address_kind = AddressKind::kVirtual;
  h.records_reads = true;
  h.properties.emplace_back("x64dbg arch", arch_name);
  if (std::string path = JsonString(json, "path"); !path.empty()) {
    h.properties.emplace_back("debuggee", path);
  }
  if (std::string hash = JsonString(json, "hash"); !hash.empty()) {
    std::string algorithm = JsonString(json, "hashAlgorithm");
    h.properties.emplace_back("debuggee hash", (algorithm.empty() ? "" : algorithm + " ") + hash);
  }
  reader->first_block_ = 8 + std::uint64_t{json_size};
  reader->ResetState();
  if (reader->at_end_) {
    reader->initial_.emplace_back(ThreadId(1), RegisterFile(layout->arch()));  // no blocks
  } else {
    BACKSTEP_RETURN_IF_ERROR(reader->Enter(reader->first_block_, nullptr));
    reader->ScanInitialThreads();
  }
  return reader;
}

// A thread that has not run yet is suspended: its registers at position 0
// are the REGDUMP at its first block.
void X64dbgReader::ScanInitialThreads() {
  std::vector<RegisterWrite> writes;
  auto add = [&](ThreadId thread, std::span<const std::uint8_t> dump,
                 std::span<const std::uint8_t> known) {
    writes.clear();
    layout_->DecodeAll(dump, known, &writes);
    RegisterFile regs(layout_->arch());
    for (const RegisterWrite& w : writes) regs.Apply(w);
    initial_.emplace_back(thread, std::move(regs));
  };
  add(thread_, dump_, slot_known_);
  X64dbgWalk walk(data_, layout_->duint(), layout_->slot_count(), source_->name());
  walk.Start(block_, thread_.value, dump_, slot_known_);
  for (std::uint64_t i = 0; i < kX64dbgLookahead && walk.Next(); ++i) {
    const ThreadId thread(walk.thread());
    const bool seen = std::any_of(initial_.begin(), initial_.end(),
                                  [&](const auto& t) { return t.first == thread; });
    if (!seen) add(thread, walk.dump(), walk.known());
  }
}

void X64dbgReader::ResetState() {
  dump_.assign(layout_->dump_size(), 0);
  slot_known_.assign(layout_->slot_count(), 0);
  at_end_ = first_block_ >= data_.size();
  thread_ = ThreadId(1);
  switched_in_ = false;
  anchor_ = first_block_;
}

Status X64dbgReader::Enter(std::uint64_t offset, const X64dbgBlock* prev) {
  const unsigned duint = layout_->duint(), slots = layout_->slot_count();
  BACKSTEP_RETURN_IF_ERROR(
      ParseX64dbgNextBlock(data_, offset, duint, slots, prev, source_->name(), &next_));
  ApplyX64dbgSlots(next_, duint, dump_, slot_known_);
  changed_.assign(next_.slots.begin(), next_.slots.begin() + next_.reg_count);
  const ThreadId before = thread_;
  if (next_.has_thread) thread_ = ThreadId(next_.thread);
  switched_in_ = prev != nullptr && thread_ != before;
  if (next_.full_dump && next_.thread_flag) anchor_ = offset;
  std::swap(block_, next_);
  at_end_ = false;
  return Status::Ok();
}

std::vector<std::pair<ThreadId, RegisterFile>> X64dbgReader::InitialRegisters() const {
  return initial_;
}

void X64dbgReader::ReadInitialMemory(Address, std::span<std::uint8_t> out,
                                     std::span<std::uint8_t> known) const {
  // x64dbg records no memory image: only what instructions touch.
  std::fill(out.begin(), out.end(), 0);
  std::fill(known.begin(), known.end(), 0);
}

ReaderPosition X64dbgReader::Tell() const {
  const std::uint64_t offset = at_end_ ? data_.size() : block_.offset;
  return {offset, anchor_ | (switched_in_ && !at_end_ ? kSwitchedInBit : 0)};
}

Status X64dbgReader::Seek(const ReaderPosition& pos) {
  if (pos == Tell()) return Status::Ok();
  const std::uint64_t anchor = pos.aux & ~kSwitchedInBit;
  const bool switched_in = pos.aux & kSwitchedInBit;
  auto foreign = [&] {
    return Status::InvalidArgument(source_->name() + ": reader position " +
                                   std::to_string(pos.offset) + "/" + std::to_string(pos.aux) +
                                   " is not a position of this trace");
  };
  if (anchor < first_block_ || anchor > pos.offset || pos.offset > data_.size() ||
      (switched_in && pos.offset == data_.size())) {
    return foreign();
  }
  ResetState();
  if (at_end_) return pos.offset == data_.size() ? Status::Ok() : foreign();
  // Re-decode from the full dump (or the first block): the dump and the
  // thread depend on every block since.
  std::uint64_t offset = anchor;
  X64dbgBlock prev;
  bool has_prev = false;
  while (true) {
    Status s = Enter(offset, has_prev ? &prev : nullptr);
    if (!s.ok()) return s.Annotate("seeking");
    if (offset == pos.offset) break;
    prev = block_;
    has_prev = true;
    offset = block_.end;
    if (offset == data_.size() && pos.offset == offset) {
      at_end_ = true;
      break;
    }
    if (offset > pos.offset) return foreign();
  }
  if (anchor_ != anchor) return foreign();
  // Re-decoded from the anchor, the block at the anchor itself does not know
  // its predecessor's thread: the position says it.
  if (!at_end_ && pos.offset != anchor && switched_in_ != switched_in) return foreign();
  switched_in_ = switched_in && !at_end_;
  return Status::Ok();
}

std::optional<std::uint64_t> X64dbgReader::DumpWord(RegisterId reg) const {
  return layout_->PieceValue(dump_, slot_known_, reg);
}

Expected<bool> X64dbgReader::Next(Event* event) {
  event->Clear();
  if (at_end_) return false;
  event->thread = thread_;
  const X64dbgBlock& b = block_;
  const unsigned duint = layout_->duint();
  if (std::optional<std::uint64_t> pc = DumpWord(layout_->pc())) {
    event->reads.push_back({*pc, b.opcode});
  }
  const bool push = b.mem_count > 0 && X64dbgIsPushOrCall(b.opcode, duint == 8);
  const std::uint64_t space_end = duint == 8 ? 0 : std::uint64_t{1} << 32;  // 0: 2^64
  const std::uint8_t* new_value = b.new_values;
  for (unsigned i = 0; i < b.mem_count; ++i) {
    const std::uint64_t address = X64dbgWord(b.addresses + std::size_t{i} * duint, duint);
    const std::uint8_t* old = b.old_values + std::size_t{i} * duint;
    const std::uint8_t* fresh = nullptr;
    if (b.changed(i)) {
      fresh = new_value;
      new_value += duint;
    }
    const std::uint64_t last = address + duint - 1;
    if (last < address || (space_end != 0 && last >= space_end)) continue;  // wraps around
    if (push && i + 1 == b.mem_count) {
      // The stack slot x64dbg re-read after the push: bit 0 means it held
      // the stored old value (TraceFileReader.cpp: new = old).
      event->writes.push_back({address, {fresh ? fresh : old, duint}});
      continue;
    }
    event->reads.push_back({address, {old, duint}});
    if (fresh) event->writes.push_back({address, {fresh, duint}});
  }
  const X64dbgBlock current = block_;
  const ThreadId thread = thread_;
  const bool switched_in = switched_in_;
  if (current.end == data_.size()) {
    at_end_ = true;
    event->flags = kEventClearsRegisters;
    if (!current.thread_flag) {
      // No switch: what the last block does not list is unchanged by it.
      ahead_known_ = slot_known_;
      for (unsigned i = 0; i < current.reg_count; ++i) ahead_known_[current.slots[i]] = 0;
      layout_->DecodeAll(dump_, ahead_known_, &event->registers);
    }
    return true;
  }
  BACKSTEP_RETURN_IF_ERROR(Enter(current.end, &current));
  if (thread_ != thread) {
    event->flags = kEventClearsRegisters;
    LookAhead(thread, &event->registers);
  } else if (switched_in) {
    event->flags = kEventClearsRegisters;
    layout_->DecodeAll(dump_, slot_known_, &event->registers);
  } else {
    layout_->Decode(dump_, slot_known_, changed_, &event->registers);
  }
  return true;
}

void X64dbgReader::LookAhead(ThreadId target, std::vector<RegisterWrite>* out) {
  X64dbgWalk walk(data_, layout_->duint(), layout_->slot_count(), source_->name());
  walk.Start(block_, thread_.value, dump_, slot_known_);
  // A damaged block ends the look-ahead; Next() reports it when it gets there.
  for (std::uint64_t i = 0; i < kX64dbgLookahead && walk.Next(); ++i) {
    if (walk.thread() == target.value) {
      layout_->DecodeAll(walk.dump(), walk.known(), out);
      return;
    }
  }
}

bool X64dbgReader::Sniff(std::span<const std::uint8_t> head) {
  return head.size() >= 4 && std::memcmp(head.data(), kX64dbgMagic, 4) == 0;
}

// PUSH, PUSHF and CALL (docs/formats/x64dbg.md §5.4): x64dbg forces their last memory
// entry onto the new stack slot, keeping an old value read elsewhere.
bool X64dbgIsPushOrCall(std::span<const std::uint8_t> op, bool is64) {
  std::size_t i = 0;
  auto prefix = [](std::uint8_t b) {
    return b == 0x66 || b == 0x67 || b == 0xf0 || b == 0xf2 || b == 0xf3 || b == 0x2e ||
           b == 0x36 || b == 0x3e || b == 0x26 || b == 0x64 || b == 0x65;
  };
  while (i < op.size() && prefix(op[i])) ++i;
  if (is64 && i < op.size() && (op[i] & 0xf0) == 0x40) ++i;
  if (i >= op.size()) return false;
  const std::uint8_t b = op[i];
  if ((b >= 0x50 && b <= 0x57) || b == 0x68 || b == 0x6a || b == 0x9c || b == 0xe8) return true;
  if (!is64 && (b == 0x06 || b == 0x0e || b == 0x16 || b == 0x1e || b == 0x9a)) return true;
  if (b == 0x0f) return i + 1 < op.size() && (op[i + 1] == 0xa0 || op[i + 1] == 0xa8);
  if (b == 0xff && i + 1 < op.size()) {
    const unsigned reg = (op[i + 1] >> 3) & 7;
    return reg == 2 || reg == 3 || reg == 6;
  }
  return false;
}

}  // namespace backstep::core
