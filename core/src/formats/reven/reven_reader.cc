#include "formats/reven/reven_reader.h"

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <utility>

#include "formats/reven/reven_format.h"
#include "util/hex.h"

namespace backstep::core {
namespace {

constexpr ThreadId kCpu(1);  // REVEN records one CPU

std::string DateString(std::uint64_t seconds) { return std::to_string(seconds) + " (Unix time)"; }

}  // namespace

RevenReader::RevenReader(std::shared_ptr<const ByteSource> source)
    : source_(std::move(source)), data_(source_->data()) {}

Expected<std::unique_ptr<RevenReader>> RevenReader::Open(std::shared_ptr<const ByteSource> source) {
  std::unique_ptr<RevenReader> reader(new RevenReader(std::move(source)));
  BACKSTEP_RETURN_IF_ERROR(reader->ParseSections());
  return reader;
}

// The four leading sections are small next to the events: they are
// validated completely at open, so that Next() only ever meets event bytes.
Status RevenReader::ParseSections() {
  const std::string& file = source_->name();
  ByteReader r(data_);
  BACKSTEP_ASSIGN_OR_RETURN(metadata_, ParseRevenMetadata(r, file, kRevenResourceTraceBin));

  BACKSTEP_ASSIGN_OR_RETURN(ByteReader header, ReadRevenSection(r, file, "header"));
  const std::uint64_t header_at = header.offset();
  const std::uint8_t compression = header.U8();
  if (!header.ok()) return RevenCorruption(file, "header", header_at, "section is empty");
  if (compression != 0) {
    return Status::Unsupported(file + ": header at offset " + HexU64(header_at) + ": compression " +
                               std::to_string(compression) + " is not supported (only 0, none)");
  }

  BACKSTEP_ASSIGN_OR_RETURN(ByteReader machine, ReadRevenSection(r, file, "machine description"));
  BACKSTEP_ASSIGN_OR_RETURN(machine_, ParseRevenMachine(machine, file));
  std::vector<std::string> unmapped;
  BACKSTEP_ASSIGN_OR_RETURN(RevenEventDecoder decoder,
                            RevenEventDecoder::Create(machine_, file, &unmapped));
  decoder_ = std::make_unique<RevenEventDecoder>(std::move(decoder));

  BACKSTEP_ASSIGN_OR_RETURN(ByteReader memory, ReadRevenSection(r, file, "initial memory"));
  BACKSTEP_RETURN_IF_ERROR(ParseInitialMemory(memory));

  BACKSTEP_ASSIGN_OR_RETURN(ByteReader regs, ReadRevenSection(r, file, "initial registers"));
  const std::uint64_t count_at = regs.offset();
  const std::uint32_t count = regs.U32();
  if (!regs.ok()) return RevenCorruption(file, "initial registers", count_at, "section is empty");
  BACKSTEP_RETURN_IF_ERROR(decoder_->DecodeRegisterSet(regs, count, /*sized=*/false, file,
                                                       "initial registers", &initial_writes_));

  BACKSTEP_RETURN_IF_ERROR(ParseEventsHeader(r));
  FillProperties(unmapped);
  LoadCache();
  return Status::Ok();
}

Status RevenReader::ParseInitialMemory(ByteReader section) {
  const std::uint64_t total = machine_.TotalMemory();
  if (section.remaining() != total) {
    return RevenCorruption(source_->name(), "initial memory", section.offset(),
                           "section holds " + std::to_string(section.remaining()) +
                               " bytes but the regions declare " + std::to_string(total));
  }
  std::uint64_t at = section.offset();
  for (const RevenRegion& region : machine_.regions) {
    if (region.size != 0) regions_.push_back({region.start, region.size, at});
    at += region.size;
  }
  // Sorted for a binary search: PANDA traces split RAM around the PCI hole,
  // and other producers may declare many small regions.
  std::sort(regions_.begin(), regions_.end(),
            [](const Region& a, const Region& b) { return a.start < b.start; });
  return Status::Ok();
}

Status RevenReader::ParseEventsHeader(ByteReader& r) {
  const std::string& file = source_->name();
  // The section's size is patched when the producer finishes, like
  // event_count: 0 means it never did, and the events run to the end of the
  // file. A size past the end is a truncated copy: decode what is there.
  const std::uint64_t at = r.offset();
  std::uint64_t size = r.U64();
  if (!r.ok()) return RevenCorruption(file, "events", at, "file ends before the events section");
  events_payload_ = r.offset();
  if (size == 0 || size > r.remaining()) size = r.remaining();
  section_end_ = events_payload_ + size;
  ByteReader payload(data_.subspan(events_payload_, size), events_payload_);
  event_count_ = payload.U64();
  if (!payload.ok()) {
    return RevenCorruption(file, "events", events_payload_,
                           "section too short for its event count");
  }
  first_event_ = offset_ = payload.offset();
  next_event_ = 0;
  header_.declared_events =
      event_count_ != 0 ? std::optional<std::uint64_t>(event_count_) : std::nullopt;
  return Status::Ok();
}

void RevenReader::FillProperties(const std::vector<std::string>& unmapped) {
  header_.format = "reven";
  header_.arch = &X86_64();
  header_.address_kind = AddressKind::kPhysical;
  header_.records_reads = false;
  for (const Region& r : regions_) {
    MemoryRegion region;  // REVEN regions have no name or permissions
    region.start = r.start;
    region.size = r.size;
    header_.regions.push_back(std::move(region));
  }
  auto& p = header_.properties;
  p.emplace_back("format version", metadata_.format_version);
  p.emplace_back("metadata version", std::to_string(metadata_.metadata_version));
  p.emplace_back("tool name", metadata_.tool_name);
  if (metadata_.metadata_version >= 1) p.emplace_back("tool version", metadata_.tool_version);
  p.emplace_back("tool info", metadata_.tool_info);
  p.emplace_back("generation date", DateString(metadata_.generation_date));
  p.emplace_back("physical address bytes", std::to_string(machine_.phy_size));
  if (event_count_ == 0) p.emplace_back("event count", "0 in the file (truncated trace?): scanned");
  for (const auto& [name, value] : machine_.static_registers) {
    p.emplace_back(name, RevenStaticValueString(value));
  }
  if (!unmapped.empty()) {
    std::string names;
    for (const std::string& n : unmapped) names += (names.empty() ? "" : ", ") + n;
    p.emplace_back("unmapped registers", names);
  }
}

void RevenReader::LoadCache() {
  // In-memory sources are named "<memory>" and the like: no file beside them.
  if (source_->name().empty() || source_->name().front() == '<') return;
  const std::string path = source_->name() + ".cache";
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) return;
  auto mapped = MapFile(path);
  if (!mapped.ok()) {
    header_.properties.emplace_back("cache", "ignored: " + mapped.status().ToString());
    return;
  }
  auto cache = RevenCache::Open(*mapped, *decoder_, section_end_ - events_payload_, event_count_);
  if (!cache.ok()) {
    header_.properties.emplace_back("cache", "ignored: " + cache.status().ToString());
    return;
  }
  cache_ = std::move(*cache);
  header_.properties.emplace_back(
      "cache", path + ": " + std::to_string(cache_->points().size()) + " resume points");
}

// PANDA's x87status/top are AND/OR pairs on fstat (reven_registers.h); they
// need a known base value, which 0 provides: the pair then sets every bit.
RegisterFile RevenReader::FileFromWrites(const std::vector<RegisterWrite>& writes) const {
  RegisterFile file(X86_64());
  if (decoder_->needs_fstat_base()) file.SetU64(*X86_64().Find("fstat"), 0);
  for (const RegisterWrite& w : writes) file.Apply(w);
  return file;
}

std::vector<std::pair<ThreadId, RegisterFile>> RevenReader::InitialRegisters() const {
  std::vector<std::pair<ThreadId, RegisterFile>> out;
  out.emplace_back(kCpu, FileFromWrites(initial_writes_));
  return out;
}

void RevenReader::ReadInitialMemory(Address address, std::span<std::uint8_t> out,
                                    std::span<std::uint8_t> known) const {
  std::fill(out.begin(), out.end(), 0);
  std::fill(known.begin(), known.end(), 0);
  if (out.empty()) return;
  // [address, last] inclusive, clipped at 2^64 - 1: an inclusive bound
  // cannot overflow where an exclusive end at the top of memory would.
  const std::uint64_t len = out.size();
  const Address last = len - 1 > ~address ? ~Address{0} : address + (len - 1);
  // First region that may overlap: the last one starting at or before address.
  auto it = std::upper_bound(regions_.begin(), regions_.end(), address,
                             [](Address a, const Region& r) { return a < r.start; });
  if (it != regions_.begin()) --it;
  for (; it != regions_.end() && it->start <= last; ++it) {
    const Address region_last = it->start + (it->size - 1);
    const Address lo = std::max(address, it->start);
    const Address hi = std::min(last, region_last);
    if (lo > hi) continue;
    const std::size_t n = static_cast<std::size_t>(hi - lo + 1);
    std::memcpy(out.data() + (lo - address), data_.data() + it->file_offset + (lo - it->start), n);
    std::fill_n(known.begin() + (lo - address), n, 1);
  }
}

Status RevenReader::Seek(const ReaderPosition& pos) {
  if (pos.offset < first_event_ || pos.offset > section_end_ ||
      (event_count_ != 0 && pos.aux > event_count_)) {
    return Status::InvalidArgument(source_->name() + ": events: cannot resume at offset " +
                                   HexU64(pos.offset) + ", event " + std::to_string(pos.aux) +
                                   " (outside the events section)");
  }
  offset_ = pos.offset;
  next_event_ = pos.aux;
  return Status::Ok();
}

Expected<bool> RevenReader::Next(Event* event) {
  event->Clear();
  if (event_count_ != 0 && next_event_ >= event_count_) return false;
  if (event_count_ == 0 && offset_ == section_end_) return false;
  // The reader stops at the section's end, not the file's: bytes past it
  // (padding) are never decoded as events.
  ByteReader r(data_.subspan(offset_, section_end_ - offset_), offset_);
  Status s = decoder_->Decode(r, next_event_, event);
  if (!s.ok()) {
    event->Clear();
    if (!s.IsOutOfRange()) return s;
    if (event_count_ == 0) return false;  // a producer that died mid-event
    return Status::Corruption(s.message() + " (the file declares " + std::to_string(event_count_) +
                              " events)");
  }
  event->thread = kCpu;
  offset_ = r.offset();
  ++next_event_;
  return true;
}

std::vector<ResumePoint> RevenReader::ResumePoints() const {
  std::vector<ResumePoint> out;
  if (!cache_) return out;
  std::vector<RegisterWrite> writes;
  for (const RevenCache::Point& p : cache_->points()) {
    writes.clear();
    // Open() decoded every point already; this cannot fail on the same bytes.
    if (!cache_->DecodeRegisters(p, *decoder_, &writes).ok()) continue;
    ResumePoint& rp = out.emplace_back();
    rp.position = Position(p.context_id);
    rp.reader_position = {events_payload_ + p.trace_events_offset, p.context_id};
    rp.registers.emplace_back(kCpu, FileFromWrites(writes));
  }
  return out;
}

// Both binresource magics. A trace.cache has the same magic: the reader then
// names its resource type instead of failing to sniff.
bool RevenReader::Sniff(std::span<const std::uint8_t> head) {
  if (head.size() < 8) return false;
  std::uint64_t magic = 0;
  for (int i = 0; i < 8; ++i) magic |= std::uint64_t{head[i]} << (8 * i);
  return magic == kRevenMagic || magic == kRevenLegacyMagic;
}

}  // namespace backstep::core
