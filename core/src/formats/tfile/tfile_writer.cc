#include "formats/tfile/tfile_writer.h"

#include <algorithm>
#include <cassert>
#include <cstring>

#include "formats/tfile/tfile_format.h"
#include "formats/tfile/tfile_tdesc.h"
#include "formats/tfile/tfile_text.h"
#include "util/hex.h"

namespace backstep::core {
namespace {

// "tdesc <!---->" plus its newline: the shortest comment line.
constexpr std::uint64_t kDecoyMinLine = 14;
// From the start of the decoy line to the decoy header: the comment and a NUL.
constexpr std::uint64_t kDecoyPrefix = 14;

}  // namespace

TfileWriter::TfileWriter(TfileWriterOptions options)
    : options_(std::move(options)), layout_(TfileRegisterLayout::ForFeatures(options_.features)) {}

Expected<std::unique_ptr<TfileWriter>> TfileWriter::Create(const std::string& path,
                                                           TfileWriterOptions options) {
  BACKSTEP_ASSIGN_OR_RETURN(AtomicFile file, AtomicFile::Create(path));
  std::unique_ptr<TfileWriter> w(new TfileWriter(std::move(options)));
  w->file_.emplace(std::move(file));
  w->name_ = path;
  w->Write({reinterpret_cast<const std::uint8_t*>(kTfileMagic.data()), kTfileMagic.size()});
  return w;
}

std::unique_ptr<TfileWriter> TfileWriter::CreateInMemory(std::vector<std::uint8_t>* out,
                                                         TfileWriterOptions options) {
  std::unique_ptr<TfileWriter> w(new TfileWriter(std::move(options)));
  w->memory_ = out;
  w->memory_base_ = out->size();
  w->name_ = "<memory>";
  w->Write({reinterpret_cast<const std::uint8_t*>(kTfileMagic.data()), kTfileMagic.size()});
  return w;
}

void TfileWriter::Write(std::span<const std::uint8_t> bytes) {
  if (!status_.ok()) return;
  if (memory_) {
    memory_->insert(memory_->end(), bytes.begin(), bytes.end());
  } else {
    file_->Write(bytes);
  }
  size_ += bytes.size();
}

void TfileWriter::WriteLine(std::string_view line) {
  if (line.size() >= kTfileMaxLineLength) {
    return Fail(Status::InvalidArgument(
        name_ + ": definition line of " + std::to_string(line.size()) +
        " characters (gdb refuses 1000 or more): " + tfile_text::Printable(line)));
  }
  Write({reinterpret_cast<const std::uint8_t*>(line.data()), line.size()});
  const std::uint8_t nl = '\n';
  Write({&nl, 1});
}

void TfileWriter::WriteDecoy(std::uint64_t decoy) {
  const std::string comment = "tdesc <!---->";
  if (size_ + kDecoyPrefix > decoy || ((decoy >> 8) & 0xff) == '\n' || (decoy & 0xff) == '\n' ||
      ((decoy >> 16) & 0xff) == '\n' || (decoy >> 24) == '\n') {
    return Fail(Status::InvalidArgument(name_ + ": cannot place a decoy frame header at offset " +
                                        std::to_string(decoy)));
  }
  // Filler comment lines, each kDecoyMinLine..999 bytes with its newline.
  std::uint64_t gap = decoy - kDecoyPrefix - size_;
  while (gap > 0) {
    std::uint64_t n = std::min<std::uint64_t>(gap, 900);
    if (gap - n > 0 && gap - n < kDecoyMinLine) n = gap - kDecoyMinLine;
    WriteLine("tdesc <!--" + std::string(n - kDecoyMinLine, ' ') + "-->");
    gap -= n;
  }
  std::string line = comment + '\0';
  line += static_cast<char>(1);  // tracepoint 1
  line += '\0';
  for (int i = 0; i < 4; ++i) line += static_cast<char>((decoy >> (8 * i)) & 0xff);
  WriteLine(line);
}

void TfileWriter::PatchHex(std::uint64_t at, std::uint64_t value, int digits) {
  std::string hex = HexPadded(value, digits).substr(2);
  hex = hex.substr(hex.size() - digits);  // a value too wide keeps its low digits
  const auto* p = reinterpret_cast<const std::uint8_t*>(hex.data());
  if (memory_) {
    std::memcpy(memory_->data() + memory_base_ + at, p, hex.size());
  } else {
    file_->WriteAt(at, {p, hex.size()});
  }
}

void TfileWriter::Fail(Status s) {
  if (status_.ok()) status_ = std::move(s);
}

Status TfileWriter::WriteDefinitions(const std::vector<TfileTsv>& tsvs,
                                     const std::vector<TfileTracepoint>& tracepoints) {
  assert(!definitions_done_ && !in_frame_);
  definitions_done_ = true;
  WriteLine("R " + tfile_text::Hex(BlockSize()));
  if (options_.write_tdesc) {
    const std::string xml = InlineTargetXml(X86_64(), options_.features);
    std::string_view rest = xml;
    const std::uint64_t decoy = options_.decoy_header_size;
    bool decoy_done = decoy == 0, first = true;
    while (!rest.empty()) {
      const std::size_t nl = rest.find('\n');
      const std::string line = "tdesc " + std::string(rest.substr(0, nl));
      rest.remove_prefix(nl == std::string_view::npos ? rest.size() : nl + 1);
      // The decoy line starts kDecoyPrefix bytes before `decoy`; insert it
      // (with filler) before the line that would cross that point, never
      // before the XML declaration, at the latest before the last line.
      if (!decoy_done && !first &&
          (size_ + line.size() + 1 + kDecoyMinLine > decoy - kDecoyPrefix || rest.empty())) {
        WriteDecoy(decoy);
        decoy_done = true;
      }
      WriteLine(line);
      first = false;
    }
    if (!decoy_done) WriteDecoy(decoy);
  }
  // Fixed-width counts, patched by Finish().
  const std::string head = "status 0;tstop::0;tframes:";
  frames_at_ = size_ + head.size();
  created_at_ = frames_at_ + 8 + std::string_view(";tcreated:").size();
  tsize_at_ = created_at_ + 8 + std::string_view(";tfree:0;tsize:").size();
  std::string status =
      head + "00000000;tcreated:00000000;tfree:0;tsize:0000000000000000" + ";circular:0;disconn:0";
  if (!options_.notes.empty()) status += ";notes:" + tfile_text::EncodeHexText(options_.notes);
  if (!options_.user.empty()) status += ";username:" + tfile_text::EncodeHexText(options_.user);
  WriteLine(status);
  for (const TfileTsv& tsv : tsvs) WriteLine(FormatTfileTsvLine(tsv));
  for (const TfileTracepoint& tp : tracepoints) {
    if (tp.number == 0) Fail(Status::InvalidArgument(name_ + ": tracepoint number 0"));
    for (const std::string& line : FormatTfileTracepointLines(tp)) WriteLine(line);
  }
  WriteLine("");
  return status_;
}

void TfileWriter::Le(std::uint64_t v, int bytes) {
  for (int i = 0; i < bytes; ++i) frame_.push_back(static_cast<std::uint8_t>(v >> (8 * i)));
}

void TfileWriter::BeginFrame(int tpnum) {
  assert(!in_frame_);
  if (!definitions_done_) WriteDefinitions({}, {});
  in_frame_ = true;
  frame_.clear();
  if (tpnum <= 0 || tpnum > kTfileMaxFrameTracepoint) {
    Fail(Status::InvalidArgument(name_ + ": frame " + std::to_string(frames_) +
                                 ": tracepoint number " + std::to_string(tpnum) +
                                 " (frames need 1.." + std::to_string(kTfileMaxFrameTracepoint) +
                                 ")"));
  }
  Le(static_cast<std::uint16_t>(tpnum), 2);
  Le(0, 4);  // size, set by EndFrame()
}

void TfileWriter::AddRegisters(const RegisterFile& regs) {
  std::vector<std::uint8_t> block = layout_.Encode(regs);
  block.resize(BlockSize());
  AddRawRegisters(block);
}

std::uint64_t TfileWriter::BlockSize() const {
  return options_.block_size != 0 ? std::min(options_.block_size, layout_.block_size())
                                  : layout_.block_size();
}

void TfileWriter::AddRawRegisters(std::span<const std::uint8_t> block) {
  assert(in_frame_ && block.size() == BlockSize());
  frame_.push_back(kTfileBlockRegisters);
  frame_.insert(frame_.end(), block.begin(), block.end());
}

void TfileWriter::AddMemory(Address address, std::span<const std::uint8_t> bytes) {
  assert(in_frame_);
  while (!bytes.empty()) {
    const std::size_t n = std::min(bytes.size(), kTfileMaxMemoryBlock);
    frame_.push_back(kTfileBlockMemory);
    Le(address, 8);
    Le(n, 2);
    frame_.insert(frame_.end(), bytes.begin(), bytes.begin() + n);
    bytes = bytes.subspan(n);
    address += n;
  }
}

void TfileWriter::AddEmptyMemory(Address address) {
  assert(in_frame_);
  frame_.push_back(kTfileBlockMemory);
  Le(address, 8);
  Le(0, 2);
}

void TfileWriter::AddTsvValue(std::int32_t number, std::int64_t value) {
  assert(in_frame_);
  frame_.push_back(kTfileBlockTsv);
  Le(static_cast<std::uint32_t>(number), 4);
  Le(static_cast<std::uint64_t>(value), 8);
}

void TfileWriter::AddStaticData(std::span<const std::uint8_t> bytes) {
  assert(in_frame_ && bytes.size() <= kTfileMaxMemoryBlock);
  frame_.push_back(kTfileBlockStatic);
  Le(bytes.size(), 2);
  frame_.insert(frame_.end(), bytes.begin(), bytes.end());
}

Status TfileWriter::EndFrame() {
  assert(in_frame_);
  in_frame_ = false;
  const std::uint64_t data = frame_.size() - kTfileFrameHeaderSize;
  if (data > 0xffffffffu) {
    Fail(Status::InvalidArgument(name_ + ": frame " + std::to_string(frames_) + " holds " +
                                 std::to_string(data) + " bytes (the size field is a u32)"));
  }
  for (int i = 0; i < 4; ++i) frame_[2 + i] = static_cast<std::uint8_t>(data >> (8 * i));
  Write(frame_);
  ++frames_;
  frame_bytes_ += frame_.size();
  return status_;
}

Status TfileWriter::Finish() {
  assert(!in_frame_ && !finished_);
  finished_ = true;
  if (!definitions_done_) WriteDefinitions({}, {});
  const std::uint8_t end[4] = {0, 0, 0, 0};
  Write(end);
  if (!status_.ok()) return status_;
  const std::uint64_t frames = std::min<std::uint64_t>(frames_, 0xffffffffu);
  PatchHex(frames_at_, frames, 8);
  PatchHex(created_at_, frames, 8);
  PatchHex(tsize_at_, frame_bytes_, 16);
  if (memory_) return status_;
  return file_->Commit();
}

}  // namespace backstep::core
