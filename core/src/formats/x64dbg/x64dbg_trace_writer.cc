#include "formats/x64dbg/x64dbg_trace_writer.h"

#include <algorithm>
#include <cstring>
#include <nlohmann/json.hpp>

#include "formats/initial_image.h"
#include "formats/x64dbg/x64dbg_block.h"
#include "formats/x64dbg/x64dbg_format.h"
#include "util/hex.h"

namespace backstep::core {
namespace {}  // namespace

Status X64dbgTraceWriter::Begin(
    const TraceHeader& header,
    const std::vector<std::pair<ThreadId, RegisterFile>>& initial_registers,
    const InitialMemoryFn& initial_memory) {
  if (header.arch == &X86_64()) {
    layout_ = &X64dbgDumpLayout::X64();
  } else {
    auto x86 = X64dbgDumpLayout::X86();
    if (!x86.ok() || &(*x86)->arch() != header.arch) {
      return Status::Unsupported(path_ + ": x64dbg traces hold x86-64 or i386 programs, not " +
                                 std::string(header.arch ? header.arch->name() : "?"));
    }
    layout_ = *x86;
  }
  if (header.address_kind != AddressKind::kVirtual) {
    return Status::Unsupported(path_ +
                               ": x64dbg traces hold virtual memory; converting a "
                               "physical-memory trace is not supported");
  }
  // x64dbg's reader knows memory only where a block's entries read or wrote
  // it: an image would be lost.
  if (const auto known = FirstKnownInitialByte(header, initial_memory)) {
    return Status::Unsupported(path_ +
                               ": x64dbg traces hold memory only where an instruction read or "
                               "wrote it, and the source has a memory image at position 0 (at " +
                               HexU64(*known) + ")");
  }
  for (const auto& [tid, regs] : initial_registers) regs_.emplace(tid.value, regs);
  image_ = initial_memory;
  std::string path, hash = "0x0";
  for (const auto& [key, value] : header.properties) {
    if (key == "debuggee") path = value;
    if (key == "debuggee hash" && value.starts_with("murmurhash ")) hash = value.substr(11);
  }
  nlohmann::ordered_json json;
  json["ver"] = 1;
  json["arch"] = layout_->json_arch();
  json["hashAlgorithm"] = "murmurhash";
  json["hash"] = hash;
  json["compression"] = "";
  json["path"] = path;
  const std::string text = json.dump();
  BACKSTEP_ASSIGN_OR_RETURN(AtomicFile file, AtomicFile::Create(path_));
  file_.emplace(std::move(file));
  file_->Write(std::span<const std::uint8_t>(kX64dbgMagic, 4));
  file_->WriteLe(text.size(), 4);
  file_->Write(text);
  written_known_.assign(layout_->slot_count(), 0);
  changed_before_.assign(layout_->slot_count(), 1);
  dump_.resize(layout_->dump_size());
  known_.resize(layout_->slot_count());
  return file_->status();
}

RegisterFile& X64dbgTraceWriter::Thread(ThreadId thread) {
  auto it = regs_.find(thread.value);
  if (it == regs_.end()) it = regs_.emplace(thread.value, RegisterFile(layout_->arch())).first;
  return it->second;
}

std::optional<std::uint8_t> X64dbgTraceWriter::OldByte(const Event& event, Address a) const {
  for (const MemoryAccess& r : event.reads) {
    if (a >= r.address && a - r.address < r.data.size()) return r.data[a - r.address];
  }
  if (auto it = memory_.find(a); it != memory_.end()) return it->second;
  std::uint8_t v = 0, known = 0;
  if (image_) image_(a, {&v, 1}, {&known, 1});
  return known ? std::optional<std::uint8_t>(v) : std::nullopt;
}

void X64dbgTraceWriter::Remember(const Event& event) {
  for (const MemoryAccess& r : event.reads) {
    for (std::size_t i = 0; i < r.data.size(); ++i) memory_[r.address + i] = r.data[i];
  }
  for (const MemoryAccess& w : event.writes) {
    for (std::size_t i = 0; i < w.data.size(); ++i) memory_[w.address + i] = w.data[i];
  }
}

Status X64dbgTraceWriter::Append(const Event& event) {
  if (!file_) return Status::InvalidArgument(path_ + ": Append before Begin");
  const std::string where = path_ + ": event " + std::to_string(events_++);
  if (event.flags & kEventClearsMemory) {
    return Status::Unsupported(where + " clears memory; x64dbg traces cannot forget memory");
  }
  RegisterFile& regs = Thread(event.thread);
  if (event.kind == EventKind::kMarker && event.writes.empty()) {
    // A thread switch (or any register-only marker): its registers show in
    // the thread's next block.
    Remember(event);
    if (event.flags & kEventClearsRegisters) regs.Clear();
    for (const RegisterWrite& w : event.registers) regs.Apply(w);
    return Status::Ok();
  }
  if (event.kind != EventKind::kInstruction) {
    return Status::Unsupported(where + " is a " + std::string(EventKindName(event.kind)) +
                               " event; x64dbg traces hold instructions only");
  }
  if (event.thread.value == 0 || event.thread.value > 0xffffffffu) {
    return Status::Unsupported(where + ": thread " + std::to_string(event.thread.value) +
                               " is not an x64dbg thread id (1..2^32-1)");
  }
  const unsigned duint = layout_->duint();
  const bool is64 = duint == 8;
  if (!regs.known(layout_->pc())) {
    return Status::Unsupported(where + ": the pc is unknown; x64dbg blocks need it");
  }
  const Address pc = regs.u64(layout_->pc());
  const MemoryAccess* opcode = nullptr;
  for (const MemoryAccess& r : event.reads) {
    if (r.address == pc && !r.data.empty() && r.data.size() <= 15) {
      opcode = &r;
      break;
    }
  }
  if (!opcode) {
    return Status::Unsupported(where + ": no instruction bytes (a read of 1..15 bytes at pc " +
                               HexU64(pc) + "); x64dbg blocks carry the opcode");
  }
  // Registers before this instruction; the previous block is written now
  // that the state after it is known.
  layout_->Encode(regs, dump_, known_);
  for (unsigned s = 0; s < layout_->slot_count(); ++s) {
    if (!known_[s] && (written_known_[s] || (pending_ && pending_->known[s]))) {
      return Status::Unsupported(where + ": register " + std::string(layout_->SlotName(s)) +
                                 " of thread " + std::to_string(event.thread.value) +
                                 " is unknown, but an earlier block stored it; an x64dbg "
                                 "trace cannot forget a register");
    }
  }
  const auto tid = static_cast<std::uint32_t>(event.thread.value);
  if (pending_) Flush(tid);
  // Memory entries: one per duint window of every access (the opcode read
  // is the opcode field).
  std::vector<Address> windows;
  auto add = [&](const MemoryAccess& a) {
    for (std::uint64_t at = 0; at < a.data.size(); at += duint) {
      if (std::find(windows.begin(), windows.end(), a.address + at) == windows.end()) {
        windows.push_back(a.address + at);
      }
    }
  };
  for (const MemoryAccess& r : event.reads) {
    if (&r != opcode) add(r);
  }
  for (const MemoryAccess& w : event.writes) add(w);
  const bool push = X64dbgIsPushOrCall(opcode->data, is64);
  const bool sp_known = regs.known(layout_->sp());
  const Address stack_slot = sp_known ? regs.u64(layout_->sp()) - duint : 0;
  std::vector<X64dbgEntry> entries;
  std::optional<X64dbgEntry> untrusted;  // a PUSH/CALL's stack slot: goes last
  for (Address a : windows) {
    const std::uint64_t space_end = is64 ? 0 : std::uint64_t{1} << 32;
    if (a + duint - 1 < a || (space_end != 0 && a + duint > space_end)) {
      return Status::Unsupported(where + ": access at " + HexU64(a) +
                                 " wraps around the address space");
    }
    std::uint8_t old[8] = {}, fresh[8] = {};
    bool old_known = true;
    for (unsigned i = 0; i < duint; ++i) {
      std::optional<std::uint8_t> b = OldByte(event, a + i);
      old_known = old_known && b.has_value();
      old[i] = b.value_or(0);
    }
    std::memcpy(fresh, old, duint);
    for (const MemoryAccess& w : event.writes) {
      for (unsigned i = 0; i < duint; ++i) {
        if (a + i >= w.address && a + i - w.address < w.data.size()) {
          fresh[i] = w.data[a + i - w.address];
        }
      }
    }
    X64dbgEntry e;
    e.address = a;
    e.old_value = X64dbgWord(old, duint);
    if (std::memcmp(old, fresh, duint) != 0) e.new_value = X64dbgWord(fresh, duint);
    if (push && sp_known && stack_slot == a && !untrusted) {
      untrusted = e;  // its old value is never read back
      continue;
    }
    if (!old_known) {
      return Status::Unsupported(where + ": memory at " + HexU64(a) +
                                 " is unknown before the instruction; x64dbg records the old "
                                 "value of every access");
    }
    entries.push_back(e);
  }
  if (untrusted) entries.push_back(*untrusted);
  if (entries.size() > 255) {
    return Status::Unsupported(where + ": " + std::to_string(entries.size()) +
                               " memory windows (an x64dbg block holds at most 255)");
  }
  pending_ = Pending{};
  pending_->thread = tid;
  pending_->opcode.assign(opcode->data.begin(), opcode->data.end());
  pending_->entries = std::move(entries);
  pending_->dump = dump_;
  pending_->known = known_;
  // Then the event itself.
  Remember(event);
  if (event.flags & kEventClearsRegisters) regs.Clear();
  for (const RegisterWrite& w : event.registers) regs.Apply(w);
  return file_->status();
}

// Writes the pending block as TraceRecord.cpp does, now that the REGDUMP
// before the next instruction (dump_/known_, of thread `next`) is known:
// a slot is stored when it differs from that one, or differed from the
// previous block's (rtOldContextChanged), or on a full dump; bit 7 when the
// next instruction is another thread's, and on full dumps; a thread id with
// bit 7 and on the block after a switch (rtNeedThreadId).
void X64dbgTraceWriter::Flush(std::optional<std::uint32_t> next) {
  const Pending& p = *pending_;
  const unsigned duint = layout_->duint();
  const bool full = std::all_of(p.known.begin(), p.known.end(), [](auto k) { return k; }) &&
                    blocks_ % kX64dbgFullDumpEvery == 0;
  std::vector<std::uint16_t> slots;
  std::vector<std::uint64_t> values;
  for (unsigned s = 0; s < layout_->slot_count(); ++s) {
    if (!p.known[s]) continue;
    const std::uint8_t* now = p.dump.data() + std::size_t{s} * duint;
    const bool differs =
        !known_[s] || std::memcmp(now, dump_.data() + std::size_t{s} * duint, duint) != 0;
    if (full || differs || changed_before_[s] || !written_known_[s]) {
      slots.push_back(static_cast<std::uint16_t>(s));
      values.push_back(X64dbgWord(now, duint));
      written_known_[s] = 1;
    }
    changed_before_[s] = differs;
  }
  // x64dbg's first block is a full dump, with bit 7; ours has bit 7 even
  // when some register is unknown, and readers then take the next block's
  // thread id as after any bit-7 block that is not a full dump.
  const bool switched = next && *next != p.thread;
  const bool flag = full || switched || blocks_ == 0;
  std::optional<std::uint32_t> thread_field;
  if (flag || need_thread_) {
    thread_field = p.thread;
    need_thread_ = switched || (flag && !full);
  }
  block_.clear();
  EncodeX64dbgBlock(duint, flag, thread_field, p.opcode, slots, values, p.entries, &block_);
  file_->Write(block_);
  ++blocks_;
  pending_.reset();
}

Status X64dbgTraceWriter::Finish() {
  if (!file_) return Status::InvalidArgument(path_ + ": Finish before Begin");
  if (pending_) {
    // The last block: the state after it is its thread's now.
    layout_->Encode(Thread(ThreadId(pending_->thread)), dump_, known_);
    Flush(std::nullopt);
  }
  return file_->Commit();
}

}  // namespace backstep::core
