#include "formats/usercorn/usercorn_events.h"

#include <cstring>

#include "backstep/core/event_notes.h"
#include "backstep/core/usercorn_recording.h"
#include "formats/usercorn/usercorn_format.h"
#include "util/hex.h"

namespace backstep::core {
namespace {

constexpr std::size_t kZeroFill = ~std::size_t{0};
// Backs the zero fill of fresh mappings (zero-initialized, costs no file
// space).
const std::uint8_t kZeros[kMaxMapZeroFill] = {};

std::string Range(Address address, std::uint64_t size) {
  return HexU64(address) + "+" + HexU64(size);
}

// The signal of one of backstep's signal SYSCALLs based at `base`, or 0.
int SignalOf(std::uint32_t num, std::uint32_t base) {
  return num > base && num - base <= kUcirMaxSignal ? static_cast<int>(num - base) : 0;
}

}  // namespace

ReaderPosition EncodeUsercornCursor(const UsercornCursor& c) {
  return {c.pos.chunk << kPositionChunkShift | c.pos.offset,
          std::uint64_t{c.frame_left} | std::uint64_t{c.pending_exit} << 32 | c.pid << 33};
}

std::optional<UsercornCursor> DecodeUsercornCursor(const ReaderPosition& p) {
  UsercornCursor c;
  c.pos.chunk = p.offset >> kPositionChunkShift;
  const std::uint64_t offset = p.offset & ((std::uint64_t{1} << kPositionChunkShift) - 1);
  if (offset > kSnappyMaxChunkData) return std::nullopt;
  c.pos.offset = static_cast<std::uint32_t>(offset);
  c.frame_left = static_cast<std::uint32_t>(p.aux);
  c.pending_exit = (p.aux >> 32) & 1;
  c.pid = p.aux >> 33;
  if (c.pid > kMaxPid) return std::nullopt;
  return c;
}

ThreadId UsercornThread(std::uint64_t pid) { return ThreadId(pid + 1); }

UsercornEventDecoder::UsercornEventDecoder(SnappyStream* stream, const UsercornArch& arch)
    : stream_(stream), arch_(&arch), pc_(arch.arch().pc()) {}

Status UsercornEventDecoder::Corrupt(SnappyPos at, const std::string& what) const {
  return Status::Corruption(stream_->name() + ": op stream at offset " + HexU64(at.chunk) + " +" +
                            HexU64(at.offset) + ": " + what);
}

Status UsercornEventDecoder::CheckPid(std::uint64_t pid, SnappyPos at) const {
  if (pid <= kMaxPid) return Status::Ok();
  return Status::Unsupported(stream_->name() + ": op stream at offset " + HexU64(at.chunk) + " +" +
                             HexU64(at.offset) + ": pid " + std::to_string(pid) +
                             " is too large (backstep handles pids up to " +
                             std::to_string(kMaxPid) + ")");
}

Expected<UsercornEventDecoder::Prologue> UsercornEventDecoder::ReadPrologue(UsercornCursor* at) {
  UsercornCursor c = *at;
  Prologue out;
  out.pid = c.pid;
  BACKSTEP_RETURN_IF_ERROR(stream_->Seek(c.pos));
  for (;;) {
    const UsercornCursor start{stream_->Tell(), c.frame_left, c.pid, c.pending_exit};
    *at = start;
    std::uint8_t type = 0;
    Status s = stream_->Peek(&type);
    if (s.IsOutOfRange()) return out;
    BACKSTEP_RETURN_IF_ERROR(s);
    const bool header = type == kOpFrame && c.frame_left == 0;
    if (!(type == kOpNop || header || (type == kOpJmp && !out.pc))) return out;
    s = ReadUcirOp(*stream_, &op_, &arena_, 0);
    if (s.IsOutOfRange()) {
      BACKSTEP_RETURN_IF_ERROR(stream_->Seek(start.pos));
      return out;
    }
    BACKSTEP_RETURN_IF_ERROR(s);
    if (header) {
      BACKSTEP_RETURN_IF_ERROR(CheckPid(op_.pid, start.pos));
      c.frame_left = op_.count;
      c.pid = op_.pid;
      continue;
    }
    if (type == kOpJmp) {
      out.pc = op_.addr;
      out.pid = c.pid;
    }
    if (c.frame_left > 0) --c.frame_left;
  }
}

Expected<bool> UsercornEventDecoder::Next(UsercornCursor* at, Event* event) {
  event->Clear();
  if (at->pending_exit) {
    event->thread = UsercornThread(at->pid);
    event->kind = EventKind::kMarker;
    event->description = "exit";
    at->pending_exit = false;
    return true;
  }
  BACKSTEP_RETURN_IF_ERROR(stream_->Seek(at->pos));  // free when already there
  arena_.clear();
  writes_.clear();
  description_.clear();
  UsercornCursor c = *at;
  Work w;
  w.event = event;
  w.pid = c.pid;
  bool leftover = false;  // the data ends before a STEP or JMP completes the event
  for (;;) {
    const UsercornCursor start{stream_->Tell(), c.frame_left, c.pid, false};
    // A complete event is delivered even when its tail is damaged: the
    // tail op is undone and the next call reports the damage.
    const Work saved = w;
    const std::size_t registers = event->registers.size(), writes = writes_.size(),
                      reads = event->reads.size(), description = description_.size();
    std::uint8_t type = 0;
    Status s = stream_->Peek(&type);
    if (s.ok() && w.complete) {
      Expected<bool> absorbs = TailAbsorbs(type, w);
      if (!absorbs.ok()) s = absorbs.status();
      if (s.ok() && !*absorbs) {
        *at = start;
        break;
      }
    }
    bool stop = false;
    if (s.ok()) s = Consume(c, w, &stop);
    if (!s.ok() && !s.IsOutOfRange() && !saved.complete) {
      event->Clear();
      return s;
    }
    if (!s.ok() || stop) {
      if (s.IsOutOfRange() && !saved.content) {
        event->Clear();
        return false;  // nothing left
      }
      w = saved;
      event->registers.resize(registers);
      event->reads.resize(reads);
      writes_.resize(writes);
      description_.resize(description);
      BACKSTEP_RETURN_IF_ERROR(stream_->Seek(start.pos));
      *at = start;
      leftover = !w.complete;  // only at the end of the data
      break;
    }
  }
  at->pending_exit = w.exit && !leftover;
  Finish(w, leftover);
  return true;
}

Expected<bool> UsercornEventDecoder::TailAbsorbs(std::uint8_t type, const Work& w) {
  switch (type) {
    case kOpJmp:
      return !w.jmp;
    case kOpSyscall: {
      // usercorn appends the SYSCALL of exit() (holding EXIT) before the
      // STEP of its instruction, every other one after it.
      BACKSTEP_ASSIGN_OR_RETURN(bool exits, SyscallHoldsExit());
      return !exits;
    }
    case kOpNop:
    case kOpFrame:
    case kOpKeyframe:
    case kOpMemMap:
    case kOpMemUnmap:
    case kOpMemProt:
      return true;
    default:  // the next instruction's ops, EXIT (usercorn writes it before the
              // exiting instruction's STEP), unknown types (the next event's error)
      return false;
  }
}

Expected<bool> UsercornEventDecoder::SyscallHoldsExit() {
  const SnappyPos start = stream_->Tell();
  bool exits = false;
  scratch_.clear();
  Status s = ReadUcirOp(*stream_, &op_, &scratch_, kMaxEventData);
  for (std::uint32_t i = 0, n = op_.count; s.ok() && i < n && !exits; ++i) {
    scratch_.clear();
    s = ReadUcirOp(*stream_, &op_, &scratch_, kMaxEventData);
    exits = s.ok() && op_.type == kOpExit;
  }
  scratch_.clear();
  if (!s.ok() && !s.IsOutOfRange()) return s;
  BACKSTEP_RETURN_IF_ERROR(stream_->Seek(start));
  return exits;
}

Status UsercornEventDecoder::Consume(UsercornCursor& c, Work& w, bool* stop) {
  const SnappyPos at = stream_->Tell();
  BACKSTEP_RETURN_IF_ERROR(ReadUcirOp(*stream_, &op_, &arena_, kMaxEventData));
  if (op_.type == kOpFrame || op_.type == kOpKeyframe) {
    if (c.frame_left != 0) return Corrupt(at, UcirOpName(op_.type) + " inside a FRAME");
    BACKSTEP_RETURN_IF_ERROR(CheckPid(op_.pid, at));
    if (w.complete && op_.pid != w.pid) {
      *stop = true;
      return Status::Ok();
    }
    c.frame_left = op_.count;
    c.pid = op_.pid;
    return Status::Ok();
  }
  if (op_.type == kOpSyscall) {
    BACKSTEP_RETURN_IF_ERROR(ConsumeSyscall(w, at));
  } else {
    BACKSTEP_RETURN_IF_ERROR(Apply(op_, c, w, /*nested=*/false, at));
  }
  if (c.frame_left > 0) --c.frame_left;
  return Status::Ok();
}

Status UsercornEventDecoder::ConsumeSyscall(Work& w, SnappyPos at) {
  if (const int delivered = SignalOf(op_.num, kUcirSignalDelivered)) {
    w.signal = delivered;
    std::vector<std::uint8_t> siginfo;
    if (op_.args.size() == 1 + kUcirSiginfoSize / 8) {
      for (std::size_t i = 1; i < op_.args.size(); ++i) {
        for (int b = 0; b < 8; ++b)
          siginfo.push_back(static_cast<std::uint8_t>(op_.args[i] >> (8 * b)));
      }
    }
    Describe(SignalNote(delivered, siginfo));
  } else if (const int fatal = SignalOf(op_.num, kUcirKilledBySignal)) {
    Describe(KilledNote(fatal));
  } else if (op_.num == kUcirExec && op_.args.size() >= 2 &&
             op_.args[1] <= 8 * (op_.args.size() - 2)) {
    std::string path;
    for (std::size_t i = 0; i < op_.args[1]; ++i) {
      path.push_back(static_cast<char>(op_.args[2 + i / 8] >> (8 * (i % 8))));
    }
    Describe(ExecNote(path));
  } else {
    Describe(SyscallNote(op_.num, op_.args, op_.value));
  }
  w.content = true;
  const std::uint32_t count = op_.count;
  UsercornCursor unused;
  for (std::uint32_t i = 0; i < count; ++i) {
    const SnappyPos nested_at = stream_->Tell();
    BACKSTEP_RETURN_IF_ERROR(ReadUcirOp(*stream_, &op_, &arena_, kMaxEventData));
    switch (op_.type) {
      case kOpFrame:
      case kOpKeyframe:
      case kOpSyscall:
      case kOpStep:
        return Corrupt(nested_at, UcirOpName(op_.type) + " inside the SYSCALL at offset " +
                                      HexU64(at.chunk) + " +" + HexU64(at.offset));
      default:
        BACKSTEP_RETURN_IF_ERROR(Apply(op_, unused, w, /*nested=*/true, nested_at));
    }
  }
  return Status::Ok();
}

Status UsercornEventDecoder::Apply(const UcirOpFields& op, UsercornCursor& c, Work& w, bool nested,
                                   SnappyPos at) {
  switch (op.type) {
    case kOpNop:
      return Status::Ok();
    case kOpExit:
      w.exit = w.content = true;
      return Status::Ok();
    case kOpJmp:
      w.rip = Rip::kSet;
      w.rip_value = op.addr;
      if (nested || w.complete) {
        w.jmp = w.jmp || !nested;
        return Status::Ok();
      }
      w.complete = w.jmp = w.content = true;  // completes an event of its own
      w.pid = c.pid;
      return Status::Ok();
    case kOpStep:
      if (w.rip == Rip::kNone) w.rip = Rip::kAdd;
      w.rip_value += op.size;
      w.complete = w.content = true;
      w.pid = c.pid;
      return Status::Ok();
    case kOpReg: {
      std::uint8_t value[8];
      for (int i = 0; i < 8; ++i) value[i] = static_cast<std::uint8_t>(op.value >> (8 * i));
      w.content = true;
      // A u64 cannot fill a wider register (xmm): only SPREG sets those.
      const RegisterId id = arch_->Find(op.reg);
      if (id != kNoRegister && arch_->arch().info(id).size <= 8) ApplyRegister(op.reg, value, w);
      return Status::Ok();
    }
    case kOpSpReg: {
      w.content = true;
      const RegisterId id = arch_->Find(op.reg);  // YMMn, ZMMn: all their parts
      const std::size_t size = id == kNoRegister ? 0 : arch_->WideSize(op.reg);
      if (id != kNoRegister && size != op.size) {
        return Corrupt(at, "SPREG of " + std::string(arch_->arch().info(id).name) + " holds " +
                               std::to_string(op.size) + " bytes, the register has " +
                               std::to_string(size));
      }
      ApplyRegister(op.reg, std::span<const std::uint8_t>(arena_.data() + op.data, op.size), w);
      return Status::Ok();
    }
    case kOpMemRead:  // no value: a placeholder, when reads are reported
      w.content = true;
      if (reports_reads_ && op.size > 0) {
        w.event->reads.push_back(
            {op.addr,
             std::span<const std::uint8_t>(kZeros, static_cast<std::size_t>(std::min<std::uint64_t>(
                                                       op.size, kMaxMapZeroFill)))});
      }
      return Status::Ok();
    case kOpMemWrite:
      w.content = true;
      if (op.size > 0) writes_.push_back({op.addr, op.data, op.size});
      return Status::Ok();
    case kOpMemMap: {
      w.content = true;
      std::string text = "map " + Range(op.addr, op.size) + " " + UcirProtString(op.prot);
      if (!op.desc.empty()) text += " " + op.desc;
      if (!op.file.empty()) text += " " + op.file + "@" + HexU64(op.file_offset);
      const bool fill = op.size > 0 && op.size <= kMaxMapZeroFill && op.size - 1 <= ~op.addr;
      if (fill) writes_.push_back({op.addr, kZeroFill, op.size});
      Describe(fill ? text : text + " (not zero-filled)");
      return Status::Ok();
    }
    case kOpMemUnmap:
      w.content = true;
      Describe("unmap " + Range(op.addr, op.size));
      return Status::Ok();
    case kOpMemProt:
      w.content = true;
      Describe("protect " + Range(op.addr, op.size) + " " + UcirProtString(op.prot));
      return Status::Ok();
    default:  // FRAME, KEYFRAME, SYSCALL are handled by the callers
      return Corrupt(at, "unexpected " + UcirOpName(op.type));
  }
}

void UsercornEventDecoder::ApplyRegister(std::uint16_t unicorn, std::span<const std::uint8_t> value,
                                         Work& w) {
  const RegisterId id = arch_->Find(unicorn);
  if (id == kNoRegister) return;  // not carried (or the pc's enum): ignored
  RegisterWrite& r = w.event->registers.emplace_back();
  r.reg = id;
  r.op = RegisterOp::kSet;
  const std::size_t n = std::min<std::size_t>(value.size(), arch_->arch().info(id).size);
  std::memcpy(r.value, value.data(), n);
  std::size_t at = n;
  for (const RegisterId part : {arch_->FindHigh(unicorn), arch_->FindTop(unicorn)}) {
    if (part == kNoRegister || value.size() <= at) return;
    RegisterWrite& h = w.event->registers.emplace_back();
    h.reg = part;
    h.op = RegisterOp::kSet;
    const std::size_t k = std::min<std::size_t>(value.size() - at, arch_->arch().info(part).size);
    std::memcpy(h.value, value.data() + at, k);
    at += k;
  }
}

void UsercornEventDecoder::Describe(const std::string& text) {
  if (!description_.empty()) description_ += "; ";
  description_ += text;
}

void UsercornEventDecoder::Finish(const Work& w, bool leftover) {
  Event& e = *w.event;
  e.thread = UsercornThread(w.pid);
  e.kind = w.signal ? EventKind::kInterrupt : EventKind::kInstruction;
  if (leftover) {
    e.kind = EventKind::kMarker;
    std::string text = w.exit ? "exit" : "effects after the last instruction";
    if (!description_.empty()) text += "; " + description_;
    description_ = std::move(text);
  }
  if (w.rip != Rip::kNone) {
    RegisterWrite& r = e.registers.emplace_back();
    r.reg = pc_;
    r.op = w.rip == Rip::kSet ? RegisterOp::kSet : RegisterOp::kAdd;
    for (int i = 0; i < 8; ++i) r.value[i] = static_cast<std::uint8_t>(w.rip_value >> (8 * i));
  }
  for (const PendingWrite& p : writes_) {
    const std::uint8_t* data = p.offset == kZeroFill ? kZeros : arena_.data() + p.offset;
    e.writes.push_back({p.address, std::span<const std::uint8_t>(data, p.size)});
  }
  e.description = description_;
}

}  // namespace backstep::core
