#include "formats/x64dbg/x64dbg_block.h"

#include <cstring>

#include "formats/x64dbg/x64dbg_format.h"
#include "util/byte_reader.h"
#include "util/hex.h"

namespace backstep::core {

Status ParseX64dbgBlock(std::span<const std::uint8_t> file, std::uint64_t offset, unsigned duint,
                        unsigned slot_count, bool force_thread, const std::string& name,
                        X64dbgBlock* out) {
  auto fail = [&](const std::string& what) {
    return Status::Corruption(name + ": block at offset " + HexU64(offset) + ": " + what);
  };
  ByteReader r(file.subspan(offset), offset);
  auto truncated = [&] {
    return fail("truncated (the file ends at offset " + HexU64(file.size()) + ")");
  };
  const std::uint8_t type = r.U8(), rc = r.U8(), mc = r.U8(), flags = r.U8();
  if (!r.ok()) return truncated();
  if (type != kX64dbgBlockInstruction) {
    return fail("block type " + std::to_string(type) + " (only type 0, an instruction, exists)");
  }
  if (flags & kX64dbgFlagReserved)
    return fail("reserved flag bits set (flags " + std::to_string(flags) + ")");
  const unsigned opcode_size = flags & kX64dbgOpcodeMask;
  if (opcode_size == 0) return fail("opcode length 0");
  out->offset = offset;
  out->thread_flag = flags & kX64dbgFlagThreadId;
  out->has_thread = out->thread_flag || force_thread;
  out->thread = out->has_thread ? r.U32() : 0;
  out->opcode = r.Bytes(opcode_size);
  auto rel = r.Bytes(rc);
  if (!r.ok()) return truncated();
  out->reg_count = rc;
  unsigned slot = 0;
  bool all_zero = true;
  for (unsigned i = 0; i < rc; ++i) {
    slot = (i == 0 ? 0 : slot + 1) + rel[i];
    all_zero = all_zero && rel[i] == 0;
    if (slot >= slot_count) {
      return fail("register slot " + std::to_string(slot) + " beyond the " +
                  std::to_string(slot_count) + " slots of the register dump");
    }
    out->slots[i] = static_cast<std::uint16_t>(slot);
  }
  out->full_dump = rc == slot_count && all_zero;
  out->reg_values = r.Bytes(std::uint64_t{rc} * duint).data();
  out->mem_count = mc;
  auto mem_flags = r.Bytes(mc);
  out->mem_flags = mem_flags.data();
  out->addresses = r.Bytes(std::uint64_t{mc} * duint).data();
  out->old_values = r.Bytes(std::uint64_t{mc} * duint).data();
  if (!r.ok()) return truncated();
  unsigned changed = 0;
  for (unsigned i = 0; i < mc; ++i) {
    if (mem_flags[i] & ~kX64dbgMemUnchanged) {
      return fail("memory entry " + std::to_string(i) + ": unknown flag bits (" +
                  std::to_string(mem_flags[i]) + ")");
    }
    changed += !(mem_flags[i] & kX64dbgMemUnchanged);
  }
  out->new_values = r.Bytes(std::uint64_t{changed} * duint).data();
  if (!r.ok()) return truncated();
  out->end = r.offset();
  return Status::Ok();
}

Status ParseX64dbgNextBlock(std::span<const std::uint8_t> file, std::uint64_t offset,
                            unsigned duint, unsigned slot_count, const X64dbgBlock* prev,
                            const std::string& name, X64dbgBlock* out) {
  const bool after_flag = prev != nullptr && prev->thread_flag;
  if (after_flag && !prev->full_dump) {
    return ParseX64dbgBlock(file, offset, duint, slot_count, true, name, out);
  }
  Status s = ParseX64dbgBlock(file, offset, duint, slot_count, false, name, out);
  if (!s.ok() && after_flag) {
    Status with_id = ParseX64dbgBlock(file, offset, duint, slot_count, true, name, out);
    if (with_id.ok()) return with_id;
  }
  return s;
}

void ApplyX64dbgSlots(const X64dbgBlock& block, unsigned duint, std::span<std::uint8_t> dump,
                      std::span<std::uint8_t> known) {
  for (unsigned i = 0; i < block.reg_count; ++i) {
    std::memcpy(dump.data() + std::size_t{block.slots[i]} * duint,
                block.reg_values + std::size_t{i} * duint, duint);
    known[block.slots[i]] = 1;
  }
}

void X64dbgWalk::Start(const X64dbgBlock& block, std::uint64_t thread,
                       std::span<const std::uint8_t> dump, std::span<const std::uint8_t> known) {
  block_ = block;
  thread_ = thread;
  dump_.assign(dump.begin(), dump.end());
  known_.assign(known.begin(), known.end());
  status_ = Status::Ok();
}

bool X64dbgWalk::Next() {
  if (!status_.ok() || block_.end >= file_.size()) return false;
  status_ = ParseX64dbgNextBlock(file_, block_.end, duint_, slot_count_, &block_, name_, &next_);
  if (!status_.ok()) return false;
  std::swap(block_, next_);
  ApplyX64dbgSlots(block_, duint_, dump_, known_);
  if (block_.has_thread) thread_ = block_.thread;
  return true;
}

void EncodeX64dbgBlock(unsigned duint, bool thread_flag, std::optional<std::uint32_t> thread,
                       std::span<const std::uint8_t> opcode, std::span<const std::uint16_t> slots,
                       std::span<const std::uint64_t> values, std::span<const X64dbgEntry> entries,
                       std::vector<std::uint8_t>* out) {
  auto word = [out, duint](std::uint64_t v) {
    for (unsigned i = 0; i < duint; ++i) out->push_back(static_cast<std::uint8_t>(v >> (8 * i)));
  };
  out->push_back(kX64dbgBlockInstruction);
  out->push_back(static_cast<std::uint8_t>(slots.size()));
  out->push_back(static_cast<std::uint8_t>(entries.size()));
  out->push_back(static_cast<std::uint8_t>((thread_flag ? kX64dbgFlagThreadId : 0) |
                                           (opcode.size() & kX64dbgOpcodeMask)));
  if (thread) {
    for (int i = 0; i < 4; ++i) out->push_back(static_cast<std::uint8_t>(*thread >> (8 * i)));
  }
  out->insert(out->end(), opcode.begin(), opcode.end());
  for (std::size_t i = 0; i < slots.size(); ++i) {
    out->push_back(static_cast<std::uint8_t>(i == 0 ? slots[0] : slots[i] - slots[i - 1] - 1));
  }
  for (std::uint64_t v : values) word(v);
  for (const X64dbgEntry& e : entries) out->push_back(e.new_value ? 0 : kX64dbgMemUnchanged);
  for (const X64dbgEntry& e : entries) word(e.address);
  for (const X64dbgEntry& e : entries) word(e.old_value);
  for (const X64dbgEntry& e : entries) {
    if (e.new_value) word(*e.new_value);
  }
}

}  // namespace backstep::core
