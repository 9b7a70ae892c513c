#include "formats/tfile/tfile_reader.h"

#include <algorithm>
#include <cstring>

#include "formats/tfile/tfile_format.h"
#include "formats/tfile/tfile_text.h"
#include "util/hex.h"

namespace backstep::core {
namespace {

constexpr ThreadId kThread(1);  // a tfile has no threads
constexpr std::size_t kMaxWarnings = 50;
constexpr std::size_t kMaxListed = 200;  // tsvs and tracepoints in the properties

std::string Join(const std::vector<std::string>& items, std::string_view sep) {
  std::string out;
  for (const std::string& s : items) out += (out.empty() ? "" : std::string(sep)) + s;
  return out;
}

}  // namespace

TfileReader::TfileReader(std::shared_ptr<const ByteSource> source)
    : source_(std::move(source)), data_(source_->data()) {}

Expected<std::unique_ptr<TfileReader>> TfileReader::Open(std::shared_ptr<const ByteSource> source) {
  std::unique_ptr<TfileReader> reader(new TfileReader(std::move(source)));
  BACKSTEP_RETURN_IF_ERROR(reader->ParseDefinitions());
  BACKSTEP_RETURN_IF_ERROR(reader->BuildLayout());
  TfileScan scan = ScanTfileFrames(reader->data_, reader->source_->name(), reader->first_frame_,
                                   reader->layout_->block_size());
  reader->FillHeader(scan);
  reader->frames_ = std::move(scan.frames);
  reader->end_offset_ = scan.end_offset;
  reader->damage_ = std::move(scan.damage);
  return reader;
}

Status TfileReader::ParseDefinitions() {
  const std::string& file = source_->name();
  const std::string_view text(reinterpret_cast<const char*>(data_.data()), data_.size());
  if (!text.starts_with(kTfileMagic)) {
    const std::size_t n = std::min<std::size_t>(data_.size(), kTfileMagic.size());
    return Status::Corruption(file + ": offset 0x0: not a gdb trace file: the magic is \"" +
                              tfile_text::Printable(text.substr(0, n)) +
                              "\", expected \"\\x7fTRACE0\\n\"");
  }
  std::size_t at = kTfileMagic.size();
  std::string warning;
  for (std::uint64_t line_number = 2;; ++line_number) {
    auto where = [&, line_at = at] {
      return "line " + std::to_string(line_number) + " at offset " + HexU64(line_at);
    };
    const std::string_view window = text.substr(at, kTfileMaxLineLength);
    const std::size_t nl = window.find('\n');
    if (nl == std::string_view::npos) {
      if (window.size() == kTfileMaxLineLength) {
        return Status::Corruption(
            file + ": " + where() + ": definition line of " + std::to_string(kTfileMaxLineLength) +
            " or more characters (gdb's limit is " + std::to_string(kTfileMaxLineLength - 1) + ")");
      }
      return Status::Corruption(file + ": " + where() +
                                ": the file ends inside the definitions (no blank line before "
                                "the frames)");
    }
    const std::string_view line = window.substr(0, nl);
    at += nl + 1;
    if (line.empty()) break;
    Status s = ParseTfileDefinitionLine(line, &defs_, &warning);
    if (!s.ok()) return Status::Corruption(file + ": " + where() + ": " + s.message());
    if (!warning.empty()) defs_.warnings.push_back(where() + ": " + warning);
  }
  first_frame_ = at;
  if (!defs_.register_block_size) {
    return Status::Corruption(file + ": offset " + HexU64(at) +
                              ": no `R` line before the frames (the register block size is "
                              "required; gdb: \"No register block size recorded\")");
  }
  return Status::Ok();
}

Status TfileReader::BuildLayout() {
  const std::uint64_t size = *defs_.register_block_size;
  if (defs_.tdesc_lines.empty()) {
    layout_ = TfileRegisterLayout::ForBlockSize(size);
    return Status::Ok();
  }
  auto tdesc = ParseTdesc(defs_.TdescXml());
  if (!tdesc.ok()) {
    // gdb warns and falls back to the executable's architecture.
    defs_.warnings.push_back("tdesc ignored: " + tdesc.status().message());
    layout_ = TfileRegisterLayout::ForBlockSize(size);
    return Status::Ok();
  }
  auto layout = TfileRegisterLayout::FromTdesc(*tdesc, size);
  if (!layout.ok())
    return Status::Unsupported(source_->name() + ": tdesc: " + layout.status().message());
  layout_ = std::move(*layout);
  return Status::Ok();
}

namespace {

// The definitions as gdb's remote upload sends them: the tfile lines without
// their keyword ("tp ", "tsv ", "status ").
TracepointDefinitions UploadDefinitions(const TfileDefinitions& defs) {
  TracepointDefinitions out;
  for (const TfileTracepoint& tp : defs.tracepoints) {
    for (std::string& line : FormatTfileTracepointLines(tp)) {
      out.tracepoints.push_back(line.substr(line.find(' ') + 1));
    }
  }
  for (const TfileTsv& tsv : defs.tsvs) {
    const std::string line = FormatTfileTsvLine(tsv);
    out.variables.push_back(line.substr(line.find(' ') + 1));
  }
  if (defs.status) out.status = defs.status->line;
  return out;
}

}  // namespace

void TfileReader::FillHeader(const TfileScan& scan) {
  header_.format = "tfile";
  header_.arch = &X86_64();
  header_.address_kind = AddressKind::kVirtual;
  header_.records_reads = false;
  if (defs_.status && defs_.status->frames) header_.declared_events = *defs_.status->frames;
  header_.tracepoints = UploadDefinitions(defs_);
  auto& p = header_.properties;
  const std::uint64_t r = *defs_.register_block_size;
  p.emplace_back("register block", HexU64(r) + " (" + std::to_string(r) + " bytes)");
  p.emplace_back("register layout", layout_->description());
  if (!layout_->unmapped().empty()) {
    p.emplace_back("unmapped registers", Join(layout_->unmapped(), ", ") + " (ignored)");
  }
  for (const std::string& note : layout_->notes()) p.emplace_back("register note", note);
  if (defs_.status) p.emplace_back("trace status", DescribeTfileStatus(*defs_.status));
  std::string frames = std::to_string(scan.frames.size());
  if (!scan.damage.ok()) {
    frames += ", then damage: " + scan.damage.message();
  } else if (scan.end_marker) {
    frames += ", end marker at " + HexU64(scan.end_offset);
  } else {
    frames += ", no end marker (the file ends after the last frame)";
  }
  p.emplace_back("frames", frames);
  if (!scan.static_frames.empty()) {
    std::vector<std::string> numbers;
    for (std::size_t i = 0; i < scan.static_frames.size() && i < 20; ++i) {
      numbers.push_back(std::to_string(scan.static_frames[i]));
    }
    p.emplace_back("static tracepoint data", "S blocks skipped in " +
                                                 std::to_string(scan.static_frames.size()) +
                                                 " frames: " + Join(numbers, ", ") +
                                                 (scan.static_frames.size() > 20 ? ", ..." : ""));
  }
  // An exporter's file may define 32767 tracepoints: `info` shows the first
  // ones; the typed API has them all.
  for (std::size_t i = 0; i < defs_.tsvs.size() && i < kMaxListed; ++i) {
    p.emplace_back("tsv " + std::to_string(defs_.tsvs[i].number), DescribeTfileTsv(defs_.tsvs[i]));
  }
  if (defs_.tsvs.size() > kMaxListed) {
    p.emplace_back("tsv", std::to_string(defs_.tsvs.size() - kMaxListed) + " more");
  }
  for (std::size_t i = 0; i < defs_.tracepoints.size() && i < kMaxListed; ++i) {
    const TfileTracepoint& tp = defs_.tracepoints[i];
    p.emplace_back("tracepoint " + std::to_string(tp.number),
                   DescribeTfileTracepoint(tp, defs_.GdbLocalNumber(i)));
  }
  if (defs_.tracepoints.size() > kMaxListed) {
    p.emplace_back("tracepoint",
                   std::to_string(defs_.tracepoints.size() - kMaxListed) + " more locations");
  }
  for (std::size_t i = 0; i < defs_.warnings.size() && i < kMaxWarnings; ++i) {
    p.emplace_back("warning", defs_.warnings[i]);
  }
  if (defs_.warnings.size() > kMaxWarnings) {
    p.emplace_back("warning", std::to_string(defs_.warnings.size() - kMaxWarnings) + " more");
  }
}

std::vector<std::pair<ThreadId, RegisterFile>> TfileReader::InitialRegisters() const {
  std::vector<std::pair<ThreadId, RegisterFile>> out;
  out.emplace_back(kThread, RegisterFile(X86_64()));
  return out;
}

void TfileReader::ReadInitialMemory(Address, std::span<std::uint8_t> out,
                                    std::span<std::uint8_t> known) const {
  std::fill(out.begin(), out.end(), 0);
  std::fill(known.begin(), known.end(), 0);
}

ReaderPosition TfileReader::Tell() const {
  return {next_ < frames_.size() ? frames_[next_].offset : end_offset_, next_};
}

Status TfileReader::Seek(const ReaderPosition& pos) {
  const bool valid = pos.aux < frames_.size()
                         ? frames_[pos.aux].offset == pos.offset
                         : pos.aux == frames_.size() && pos.offset == end_offset_;
  if (!valid) {
    return Status::InvalidArgument(source_->name() + ": cannot resume at offset " +
                                   HexU64(pos.offset) + ", frame " + std::to_string(pos.aux) +
                                   " (not a frame boundary)");
  }
  next_ = pos.aux;
  return Status::Ok();
}

std::optional<ReaderPosition> TfileReader::EventPosition(std::uint64_t event) const {
  if (event >= frames_.size()) return std::nullopt;
  return ReaderPosition{frames_[event].offset, event};
}

Expected<bool> TfileReader::Next(Event* event) {
  event->Clear();
  if (next_ >= frames_.size()) {
    if (!damage_.ok()) return damage_;
    return false;
  }
  BACKSTEP_RETURN_IF_ERROR(DecodeTfileFrame(data_, source_->name(), next_, frames_[next_],
                                            layout_->block_size(), &frame_));
  event->thread = kThread;
  event->kind = EventKind::kFrame;
  event->flags = kEventClearsRegisters | kEventClearsMemory;
  FrameRegisterWrites(frame_, &event->registers);
  // Reverse order: where M blocks overlap, the first one wins (as in gdb).
  for (auto it = frame_.memory.rbegin(); it != frame_.memory.rend(); ++it) {
    if (!it->data.empty()) event->writes.push_back({it->address, it->data});
  }
  description_ = "tracepoint " + std::to_string(frame_.header.tpnum);
  for (const TfileTsvValue& v : frame_.tsv_values) {
    event->variables.push_back({v.number, v.value});
    const std::string name = TsvName(v.number);
    description_ += ", " + (name.empty() ? "tsv " + std::to_string(v.number) : "$" + name) + " = " +
                    std::to_string(v.value);
  }
  event->description = description_;
  ++next_;
  return true;
}

const TfileTracepoint* TfileReader::FrameTracepoint(std::uint64_t n) const {
  const int tpnum = frames_[n].tpnum;
  if (tpnum <= 0) return nullptr;
  const auto& index = defs_.tracepoint_index;
  auto it = index.lower_bound({static_cast<std::uint32_t>(tpnum), 0});
  if (it == index.end() || it->first.first != static_cast<std::uint32_t>(tpnum)) return nullptr;
  const auto next = std::next(it);
  if (next != index.end() && next->first.first == it->first.first) return nullptr;  // locations
  return &defs_.tracepoints[it->second];
}

Expected<TfileFrame> TfileReader::ReadFrame(std::uint64_t n) const {
  TfileFrame frame;
  BACKSTEP_RETURN_IF_ERROR(
      DecodeTfileFrame(data_, source_->name(), n, frames_[n], layout_->block_size(), &frame));
  return frame;
}

Expected<RegisterFile> TfileReader::FrameRegisters(std::uint64_t n) const {
  BACKSTEP_ASSIGN_OR_RETURN(TfileFrame frame, ReadFrame(n));
  std::vector<RegisterWrite> writes;
  FrameRegisterWrites(frame, &writes);
  RegisterFile regs(X86_64());
  for (const RegisterWrite& w : writes) regs.Apply(w);
  return regs;
}

std::string TfileReader::TsvName(std::int32_t number) const {
  for (const TfileTsv& tsv : defs_.tsvs) {
    if (static_cast<std::int64_t>(tsv.number) == number) return tsv.name;
  }
  return "";
}

void TfileReader::FrameRegisterWrites(const TfileFrame& frame,
                                      std::vector<RegisterWrite>* out) const {
  if (frame.register_blocks != 0) {
    layout_->Decode(frame.registers, out);
    return;
  }
  // gdb's guess: the pc is the tracepoint's address, unless the tracepoint
  // has several locations or while-stepping (tracefile.c).
  const TfileTracepoint* tp = FrameTracepoint(frame.number);
  if (tp == nullptr || tp->step_count != 0) return;
  RegisterWrite& w = out->emplace_back();
  w.reg = X86_64().pc();
  w.op = RegisterOp::kSet;
  for (int i = 0; i < 8; ++i) w.value[i] = static_cast<std::uint8_t>(tp->address >> (8 * i));
}

bool TfileReader::Sniff(std::span<const std::uint8_t> head) {
  return head.size() >= kTfileMagic.size() &&
         std::equal(kTfileMagic.begin(), kTfileMagic.end(), head.begin(),
                    [](char a, std::uint8_t b) { return static_cast<std::uint8_t>(a) == b; });
}

}  // namespace backstep::core
