#include "formats/usercorn/usercorn_trace_writer.h"

#include <algorithm>

#include "formats/usercorn/usercorn_events.h"

namespace backstep::core {
namespace {

constexpr std::size_t kPieceSize = std::size_t{1} << 20;
constexpr std::uint64_t kMaxRegionData = 0xffffffffu;
// Unicorn's x86 register enums are below this (UC_X86_REG_ENDING is ~260).
constexpr std::uint16_t kMaxUnicornEnum = 1024;

}  // namespace

Status UsercornTraceWriter::UseThread(ThreadId thread, const std::string& where) {
  if (thread.value == 0 || thread.value - 1 > kMaxPid) {
    return Status::Unsupported(where + ": thread " + std::to_string(thread.value) +
                               " has no usercorn pid (pid = thread - 1)");
  }
  if (thread_ && *thread_ == thread) return Status::Ok();
  // Another thread: its events go into FRAMEs of its pid, as `backstep
  // record` writes them; the JMP to where this thread continues closes its
  // last event (SwitchThread writes it only when it is not the
  // fall-through).
  if (thread_ && writer_) {
    const RegisterId pc = arch_.arch().pc();
    writer_->SwitchThread(thread.value - 1,
                          regs_->known(pc) ? std::optional<Address>(regs_->u64(pc)) : std::nullopt);
  }
  thread_ = thread;
  regs_ = &threads_.try_emplace(thread, arch_.arch()).first->second;
  return Status::Ok();
}

std::uint16_t UsercornTraceWriter::TopOwner(RegisterId id) {
  if (top_owner_.empty()) {
    top_owner_.assign(arch_.arch().register_count(), kNoUnicornRegister);
    for (std::uint16_t u = 0; u < kMaxUnicornEnum; ++u) {
      const RegisterId top = arch_.FindTop(u);
      if (top != kNoRegister && top_owner_[top] == kNoUnicornRegister) top_owner_[top] = u;
    }
  }
  return id < top_owner_.size() ? top_owner_[id] : kNoUnicornRegister;
}

void UsercornTraceWriter::CollectRegisters(const std::vector<RegisterId>& touched) {
  values_.clear();
  special_bytes_.clear();
  special_.clear();
  const ArchDescription& arch = arch_.arch();
  std::vector<std::uint16_t> enums;   // of special_bytes_
  std::vector<std::uint16_t> paired;  // u64 pairs (FIP) already written
  for (RegisterId id : touched) {
    if (!regs_->known(id)) continue;
    const std::uint16_t unicorn = arch_.UnicornOf(id);
    const std::uint16_t wide = arch_.WideOf(id);
    if (const std::uint16_t enum_of_pair = arch_.SplitU64Of(id);
        enum_of_pair != kNoUnicornRegister) {
      // One REG with both halves, once (an unknown half goes out as 0).
      const RegisterId low = arch_.Find(enum_of_pair), high = arch_.FindHigh(enum_of_pair);
      if (std::find(paired.begin(), paired.end(), enum_of_pair) != paired.end()) continue;
      paired.push_back(enum_of_pair);
      const std::uint64_t lo = regs_->known(low) ? regs_->u64(low) : 0;
      const std::uint64_t hi = regs_->known(high) ? regs_->u64(high) : 0;
      values_.push_back({enum_of_pair, lo | hi << (8 * arch.info(low).size)});
    } else if (unicorn != kNoUnicornRegister && arch.info(id).size <= 8) {
      values_.push_back({unicorn, regs_->u64(id)});
    } else if (unicorn != kNoUnicornRegister) {
      auto bytes = regs_->bytes(id);
      special_bytes_.emplace_back(bytes.begin(), bytes.end());
      enums.push_back(unicorn);
    } else if (const std::uint16_t owner = wide != kNoUnicornRegister ? wide : TopOwner(id);
               owner != kNoUnicornRegister) {
      // A part of a wide SPREG (ymmNh of YMMn, zmmNh of ZMMn): the whole
      // register, when every part is known.
      std::vector<std::uint8_t> bytes;
      bool known = true;
      for (RegisterId part : {arch_.Find(owner), arch_.FindHigh(owner), arch_.FindTop(owner)}) {
        if (part == kNoRegister) continue;
        known = known && regs_->known(part);
        auto b = regs_->bytes(part);
        bytes.insert(bytes.end(), b.begin(), b.end());
      }
      if (!known) continue;
      special_bytes_.push_back(std::move(bytes));
      enums.push_back(owner);
    }  // else: not carried, dropped
  }
  for (std::size_t i = 0; i < enums.size(); ++i) special_.emplace_back(enums[i], special_bytes_[i]);
}

Status UsercornTraceWriter::Begin(
    const TraceHeader& header,
    const std::vector<std::pair<ThreadId, RegisterFile>>& initial_registers,
    const InitialMemoryFn& initial_memory) {
  if (header.arch != &X86_64()) {
    return Status::Unsupported(path_ + ": backstep writes x86_64 usercorn traces only");
  }
  if (header.address_kind != AddressKind::kVirtual) {
    return Status::Unsupported(path_ +
                               ": usercorn traces hold virtual memory; converting a "
                               "physical-memory trace is not supported");
  }
  if (initial_registers.size() > 1) {
    // The keyframe holds one thread's registers; another thread can only
    // start with an event of its own (a FRAME of its pid), which would
    // shift every position.
    return Status::Unsupported(path_ +
                               ": a usercorn keyframe holds one thread, and the source has " +
                               std::to_string(initial_registers.size()) + " threads at position 0");
  }
  std::uint64_t pid = 0;
  if (!initial_registers.empty()) {
    // usercorn's keyframe lists the tracked registers that are not zero: one
    // left out reads back as 0, so an unknown one would be invented.
    for (RegisterId id : arch_.tracked()) {
      if (!initial_registers[0].second.known(id)) {
        return Status::Unsupported(
            path_ +
            ": a usercorn keyframe gives every tracked register a value (0 when left "
            "out), and the source does not know " +
            std::string(arch_.arch().info(id).name) + " at position 0");
      }
    }
    BACKSTEP_RETURN_IF_ERROR(UseThread(initial_registers[0].first, path_));
    *regs_ = initial_registers[0].second;
    pid = thread_->value - 1;
  } else {
    BACKSTEP_RETURN_IF_ERROR(UseThread(ThreadId(1), path_));  // the keyframe's pid 0
  }
  // Keyframe registers: tracked ones when non-zero, optional ones when known.
  std::vector<RegisterId> ids(arch_.tracked().begin(), arch_.tracked().end());
  for (RegisterId id = 0; id < arch_.arch().register_count(); ++id) {
    if (!arch_.IsTracked(id)) ids.push_back(id);  // the carried ones are kept
  }
  CollectRegisters(ids);
  std::erase_if(values_, [&](const UsercornRegisterValue& v) {
    return v.value == 0 && arch_.IsTracked(arch_.Find(v.unicorn));
  });
  std::vector<UsercornMapping> mappings;
  for (const MemoryRegion& r : header.regions) {
    UsercornMapping& m = mappings.emplace_back();
    m.address = r.start;
    m.size = r.size;
    m.desc = r.name;
  }
  // Regions are read in pieces; *data ends with the last piece holding a
  // non-zero byte. Regions past 4 GiB (a MEM_WRITE's limit) get no data.
  std::vector<std::uint8_t> piece(kPieceSize), known(kPieceSize);
  auto read = [&](const UsercornMapping& m, std::vector<std::uint8_t>* data) {
    if (!initial_memory || m.size > kMaxRegionData) return Status::Ok();
    for (std::uint64_t at = 0; at < m.size; at += kPieceSize) {
      const std::size_t n =
          static_cast<std::size_t>(std::min<std::uint64_t>(kPieceSize, m.size - at));
      std::span<std::uint8_t> out(piece.data(), n), mask(known.data(), n);
      initial_memory(m.address + at, out, mask);
      for (std::size_t i = 0; i < n; ++i) out[i] &= mask[i] ? 0xff : 0;
      if (std::all_of(out.begin(), out.end(), [](std::uint8_t b) { return b == 0; })) continue;
      data->resize(static_cast<std::size_t>(at));
      data->insert(data->end(), out.begin(), out.end());
    }
    return Status::Ok();
  };
  options_.declare_reads = options_.declare_reads || header.records_reads;
  BACKSTEP_ASSIGN_OR_RETURN(writer_, UsercornWriter::CreateFile(path_, options_));
  const RegisterId pc = arch_.arch().pc();
  return writer_->Begin(pid, values_, mappings, read,
                        regs_->known(pc) ? std::optional<Address>(regs_->u64(pc)) : std::nullopt,
                        special_);
}

Status UsercornTraceWriter::Append(const Event& event) {
  if (!writer_) return Status::InvalidArgument(path_ + ": Append() before Begin()");
  const std::string where = path_ + ": event " + std::to_string(events_);
  BACKSTEP_RETURN_IF_ERROR(UseThread(event.thread, where));
  if (event.flags != 0) {
    return Status::Unsupported(where + ": usercorn cannot express an event that clears state");
  }
  const RegisterId pc = arch_.arch().pc();
  const bool has_before = regs_->known(pc);
  const Address from = regs_->u64(pc);  // 0 when unknown
  touched_.clear();
  for (const RegisterWrite& w : event.registers) {
    regs_->Apply(w);
    if (w.reg != pc && std::find(touched_.begin(), touched_.end(), w.reg) == touched_.end()) {
      touched_.push_back(w.reg);
    }
  }
  const bool has_after = regs_->known(pc);
  const Address to = regs_->u64(pc);
  CollectRegisters(touched_);
  UsercornInstruction insn;
  insn.reads = event.reads;
  insn.writes = event.writes;
  insn.registers = values_;
  insn.special = special_;
  ++events_;
  if (event.kind == EventKind::kInstruction) {
    insn.pc_known = has_before;
    insn.pc = from;
    const std::uint64_t delta = has_before && has_after ? to - from : 0;
    insn.size = delta >= 1 && delta <= 15 ? static_cast<std::uint8_t>(delta) : 0;
    writer_->AppendInstruction(insn);
    if (has_after && (!has_before || to != from + insn.size)) writer_->AppendJump(to);
  } else if (event.kind == EventKind::kMarker && event.description == "exit" && insn.empty()) {
    writer_->AppendExit();
  } else if (has_after) {
    insn.pc = to;
    writer_->AppendJumpEvent(insn);
  } else {
    writer_->AppendEffects(insn);  // no terminator: the effects join the next event
  }
  return writer_->status();
}

Status UsercornTraceWriter::Finish() {
  if (!writer_) return Status::InvalidArgument(path_ + ": Finish() before Begin()");
  return writer_->Finish();
}

}  // namespace backstep::core
