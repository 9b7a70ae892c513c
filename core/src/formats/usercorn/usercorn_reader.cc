#include "formats/usercorn/usercorn_reader.h"

#include <algorithm>
#include <cstring>

#include "formats/usercorn/usercorn_format.h"
#include "util/byte_reader.h"
#include "util/hex.h"

namespace backstep::core {
namespace {

Status HeaderError(const std::string& file, std::uint64_t at, const std::string& what) {
  return Status::Corruption(file + ": header at offset " + HexU64(at) + ": " + what);
}

// A NUL-padded ASCII name; nullopt if it has other bytes after the first NUL
// or non-printable ones before it.
std::optional<std::string> PaddedName(std::span<const std::uint8_t> field) {
  const auto nul = std::find(field.begin(), field.end(), 0);
  if (std::any_of(nul, field.end(), [](std::uint8_t b) { return b != 0; })) return std::nullopt;
  if (std::any_of(field.begin(), nul, [](std::uint8_t b) { return b < 0x20 || b > 0x7e; })) {
    return std::nullopt;
  }
  return std::string(field.begin(), nul);
}

// [address, address + size) without wrapping past 2^64.
bool Fits(Address address, std::uint64_t size) { return size == 0 || size - 1 <= ~address; }

}  // namespace

UsercornReader::UsercornReader(std::shared_ptr<const ByteSource> source)
    : source_(std::move(source)), stream_(source_->data(), kUcirHeaderSize, source_->name()) {}

Expected<std::unique_ptr<UsercornReader>> UsercornReader::Open(
    std::shared_ptr<const ByteSource> source) {
  std::unique_ptr<UsercornReader> reader(new UsercornReader(std::move(source)));
  BACKSTEP_RETURN_IF_ERROR(reader->ParseHeader());
  reader->decoder_ = std::make_unique<UsercornEventDecoder>(&reader->stream_, *reader->arch_);
  UsercornCursor cursor;
  BACKSTEP_RETURN_IF_ERROR(reader->ReadKeyframe(&cursor));
  reader->decoder_->set_reports_reads(reader->declares_reads_);
  BACKSTEP_ASSIGN_OR_RETURN(UsercornEventDecoder::Prologue prologue,
                            reader->decoder_->ReadPrologue(&cursor));
  reader->cursor_ = cursor;
  if (prologue.pc) {
    const ThreadId thread = UsercornThread(prologue.pid);
    auto& initial = reader->initial_;
    auto it = std::find_if(initial.begin(), initial.end(),
                           [&](const auto& t) { return t.first == thread; });
    if (it == initial.end())
      it = initial.insert(initial.end(), {thread, RegisterFile(reader->arch_->arch())});
    it->second.SetU64(reader->arch_->arch().pc(), *prologue.pc);
  }
  reader->FillHeader(prologue.pc);
  return reader;
}

Status UsercornReader::ParseHeader() {
  const std::string& file = source_->name();
  const auto data = source_->data();
  if (data.size() < kUcirHeaderSize) {
    return HeaderError(file, 0,
                       "file holds " + std::to_string(data.size()) +
                           " bytes, a UCIR header needs " + std::to_string(kUcirHeaderSize));
  }
  if (std::memcmp(data.data(), kUcirMagic, 4) != 0) {
    return HeaderError(file, 0, "magic " + HexBytes(data.first(4), ' ') + " is not \"UCIR\"");
  }
  ByteReader r(data.first(kUcirHeaderSize));
  r.Skip(4);
  version_ = r.U32BigEndian();
  if (version_ > kUcirVersion) {
    return Status::Unsupported(file + ": header at offset 0x4: UCIR version " +
                               std::to_string(version_) + " (backstep reads 0 and 1)");
  }
  const auto arch = PaddedName(r.Bytes(kUcirNameSize));
  if (!arch || arch->empty()) {
    return HeaderError(file, 8, "the architecture is not a NUL-padded name");
  }
  const auto os = PaddedName(r.Bytes(kUcirNameSize));
  if (!os) return HeaderError(file, 8 + kUcirNameSize, "the OS is not a NUL-padded name");
  os_ = *os;
  const std::uint8_t code_order = r.U8(), data_order = r.U8();
  if (code_order > kUcirBigEndian || data_order > kUcirBigEndian) {
    return HeaderError(file, 72,
                       "byte orders " + std::to_string(code_order) + "/" +
                           std::to_string(data_order) + " (0 little, 1 big)");
  }
  auto found = FindUsercornArch(*arch);
  if (!found.ok()) return found.status().Annotate(file + ": header at offset 0x8");
  arch_ = *found;
  if (code_order != kUcirLittleEndian || data_order != kUcirLittleEndian) {
    return Status::Unsupported(file + ": header at offset 0x48: big-endian " + *arch +
                               " is not supported");
  }
  if (data.size() >= kMaxFileSize) {
    return Status::Unsupported(file + ": files of 2^47 bytes or more are not supported");
  }
  return Status::Ok();
}

Status UsercornReader::ReadKeyframe(UsercornCursor* cursor) {
  const std::string& file = source_->name();
  BACKSTEP_RETURN_IF_ERROR(stream_.Start());
  *cursor = UsercornCursor{stream_.Tell(), 0, 0, false};
  std::uint8_t type = 0;
  Status s = stream_.Peek(&type);
  if (s.IsOutOfRange() && stream_.truncated()) {
    return Status::Corruption(s.message() + " (before the keyframe)");
  }
  if (s.IsOutOfRange() || (s.ok() && type != kOpKeyframe)) return Status::Ok();  // none
  BACKSTEP_RETURN_IF_ERROR(s);
  UcirOpFields op;
  const SnappyPos start = stream_.Tell();
  auto cut = [&](std::uint64_t i, std::uint64_t n) {
    return Status::Corruption(file + ": keyframe at offset " + HexU64(start.chunk) + " +" +
                              HexU64(start.offset) + ": the data ends after " + std::to_string(i) +
                              " of its " + std::to_string(n) + " ops");
  };
  s = ReadUcirOp(stream_, &op, &arena_, 0);
  if (s.IsOutOfRange()) return cut(0, 0);
  BACKSTEP_RETURN_IF_ERROR(s);
  if (op.pid > kMaxPid) {
    return Status::Unsupported(file + ": keyframe at offset " + HexU64(start.chunk) + " +" +
                               HexU64(start.offset) + ": pid " + std::to_string(op.pid) +
                               " is too large (backstep handles pids up to " +
                               std::to_string(kMaxPid) + ")");
  }
  keyframe_pid_ = op.pid;
  RegisterFile regs(arch_->arch());
  for (RegisterId id : arch_->tracked()) regs.SetU64(id, 0);
  const std::uint32_t count = op.count;
  for (std::uint32_t i = 0; i < count; ++i) {
    const SnappyPos at = stream_.Tell();
    arena_.clear();
    s = ReadUcirOp(stream_, &op, &arena_, kMaxKeyframeData - image_.data_bytes());
    if (s.IsOutOfRange()) return cut(i, count);
    if (s.IsUnsupported()) return s.Annotate("keyframe");
    BACKSTEP_RETURN_IF_ERROR(s);
    BACKSTEP_RETURN_IF_ERROR(ApplyKeyframeOp(op, at, regs));
  }
  arena_ = {};
  initial_.emplace_back(UsercornThread(*keyframe_pid_), std::move(regs));
  *cursor = UsercornCursor{stream_.Tell(), 0, *keyframe_pid_, false};
  return Status::Ok();
}

Status UsercornReader::ApplyKeyframeOp(const UcirOpFields& op, SnappyPos at, RegisterFile& regs) {
  auto error = [&](const std::string& what) {
    return Status::Corruption(source_->name() + ": keyframe op at offset " + HexU64(at.chunk) +
                              " +" + HexU64(at.offset) + ": " + what);
  };
  const bool after_map = last_map_.has_value();
  std::optional<UcirOpFields> map;
  last_map_.swap(map);
  switch (op.type) {
    case kOpMemRead:
      // backstep's declaration: every instruction's reads are recorded.
      if (op.size == 0) declares_reads_ = true;
      return Status::Ok();
    case kOpNop:
    case kOpMemProt:  // the image has no protections
      return Status::Ok();
    case kOpReg:
    case kOpSpReg: {
      ++keyframe_registers_;
      const RegisterId id = arch_->Find(op.reg);
      if (id == kNoRegister) {
        if (op.reg != arch_->pc_enum()) ignored_.push_back(op.reg);
        return Status::Ok();
      }
      const std::uint16_t size = arch_->arch().info(id).size;
      if (op.type == kOpReg) {
        if (size > 8) return Status::Ok();  // only SPREG fills wide registers
        std::uint8_t value[8];
        for (int i = 0; i < 8; ++i) value[i] = static_cast<std::uint8_t>(op.value >> (8 * i));
        regs.Set(id, std::span<const std::uint8_t>(value, size));
        return Status::Ok();
      }
      const RegisterId high = arch_->FindHigh(op.reg);  // YMMn: xmmN + ymmNh
      const RegisterId top = arch_->FindTop(op.reg);    // ZMMn: ... + zmmNh
      const std::uint16_t high_size = high == kNoRegister ? 0 : arch_->arch().info(high).size;
      const std::size_t wide = arch_->WideSize(op.reg);
      if (op.size != wide) {
        return error("SPREG of " + std::string(arch_->arch().info(id).name) + " holds " +
                     std::to_string(op.size) + " bytes, the register has " + std::to_string(wide));
      }
      regs.Set(id, std::span<const std::uint8_t>(arena_.data() + op.data, size));
      if (high != kNoRegister) {
        regs.Set(high, std::span<const std::uint8_t>(arena_.data() + op.data + size, high_size));
      }
      if (top != kNoRegister) {
        regs.Set(top, std::span<const std::uint8_t>(arena_.data() + op.data + size + high_size,
                                                    wide - size - high_size));
      }
      return Status::Ok();
    }
    case kOpMemMap:
      if (!Fits(op.addr, op.size)) return error("MEM_MAP range wraps around the address space");
      ++keyframe_maps_;
      if (op.size == 0) return Status::Ok();
      image_.Map(op.addr, op.size, op.file.empty() ? op.desc : op.file, UcirProtString(op.prot),
                 op.file.empty() ? std::nullopt : std::optional(op.file_offset));
      last_map_ = op;
      return Status::Ok();
    case kOpMemWrite:
      if (!Fits(op.addr, op.size)) return error("MEM_WRITE range wraps around the address space");
      image_.Write(op.addr, std::span<const std::uint8_t>(arena_.data() + op.data, op.size));
      if (after_map) {
        image_.NoteMapWrite(map->addr, map->size, map->file.empty() ? map->desc : map->file,
                            op.addr, op.size);
      }
      return Status::Ok();
    case kOpMemUnmap:
      if (!Fits(op.addr, op.size)) return error("MEM_UNMAP range wraps around the address space");
      if (op.size != 0) image_.Unmap(op.addr, op.size);
      return Status::Ok();
    case kOpJmp:
      regs.SetU64(arch_->arch().pc(), op.addr);
      return Status::Ok();
    default:  // FRAME, KEYFRAME, STEP, SYSCALL, EXIT
      return error(UcirOpName(op.type) + " inside the KEYFRAME");
  }
}

void UsercornReader::FillHeader(std::optional<Address> pc) {
  header_.format = "usercorn";
  header_.arch = &arch_->arch();
  header_.address_kind = AddressKind::kVirtual;
  header_.records_reads = declares_reads_;
  header_.read_values = false;
  header_.describes_mappings = true;
  header_.regions = image_.Regions();
  auto& p = header_.properties;
  p.emplace_back("version", std::to_string(version_));
  p.emplace_back("arch", std::string(arch_->name()));
  p.emplace_back("os", os_);
  if (keyframe_pid_) {
    p.emplace_back("keyframe", "pid " + std::to_string(*keyframe_pid_) + " (thread " +
                                   std::to_string(UsercornThread(*keyframe_pid_).value) +
                                   "): " + std::to_string(keyframe_registers_) + " registers, " +
                                   std::to_string(keyframe_maps_) + " mappings, " +
                                   std::to_string(image_.data_bytes()) + " bytes of data");
  } else {
    p.emplace_back("keyframe", "none: registers and memory are unknown at position 0");
  }
  p.emplace_back("initial pc",
                 pc ? HexU64(*pc) : std::string("unknown (no JMP before the first instruction)"));
  if (!ignored_.empty()) {
    std::sort(ignored_.begin(), ignored_.end());
    ignored_.erase(std::unique(ignored_.begin(), ignored_.end()), ignored_.end());
    std::string list;
    for (std::uint16_t e : ignored_) list += (list.empty() ? "" : ", ") + std::to_string(e);
    p.emplace_back("unmapped registers", "Unicorn enums " + list + " (ignored)");
  }
  std::optional<Address> sp;
  for (const auto& [thread, regs] : initial_) {
    if (keyframe_pid_ && thread == UsercornThread(*keyframe_pid_))
      sp = regs.u64(arch_->arch().sp());
  }
  for (std::string& w : image_.TrimWarnings(sp)) p.emplace_back("keyframe warning", std::move(w));
}

std::vector<std::pair<ThreadId, RegisterFile>> UsercornReader::InitialRegisters() const {
  return initial_;
}

Status UsercornReader::Seek(const ReaderPosition& pos) {
  const std::optional<UsercornCursor> cursor = DecodeUsercornCursor(pos);
  if (!cursor) {
    return Status::InvalidArgument(source_->name() + ": cannot resume at " + HexU64(pos.offset) +
                                   "/" + HexU64(pos.aux) + " (not a usercorn reader position)");
  }
  BACKSTEP_RETURN_IF_ERROR(stream_.Seek(cursor->pos));
  cursor_ = *cursor;
  return Status::Ok();
}

Expected<bool> UsercornReader::Next(Event* event) { return decoder_->Next(&cursor_, event); }

bool UsercornReader::Sniff(std::span<const std::uint8_t> head) {
  return head.size() >= 4 && std::memcmp(head.data(), kUcirMagic, 4) == 0;
}

}  // namespace backstep::core
