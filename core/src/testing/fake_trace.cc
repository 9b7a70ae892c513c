#include "backstep/testing/fake_trace.h"

#include <algorithm>
#include <cstring>
#include <fstream>

#include "util/byte_reader.h"
#include "util/hex.h"

namespace backstep::core::testing {
namespace {

constexpr char kMagic[] = "BSFAKE01";

class Out {
 public:
  void Le(std::uint64_t v, int n) {
    for (int i = 0; i < n; ++i) bytes.push_back(static_cast<std::uint8_t>(v >> (8 * i)));
  }
  void Bytes(std::span<const std::uint8_t> b) { bytes.insert(bytes.end(), b.begin(), b.end()); }
  std::vector<std::uint8_t> bytes;
};

void PutAccesses(Out& out, const std::vector<FakeAccess>& accesses) {
  out.Le(accesses.size(), 2);
  for (const FakeAccess& a : accesses) {
    out.Le(a.address, 8);
    out.Le(a.data.size(), 4);
    out.Bytes(a.data);
  }
}

class FakeTraceReader final : public TraceReader {
 public:
  explicit FakeTraceReader(std::shared_ptr<const ByteSource> source) : source_(std::move(source)) {}

  Status Parse();

  const TraceHeader& header() const override { return header_; }
  const ByteSource& source() const override { return *source_; }
  std::vector<std::pair<ThreadId, RegisterFile>> InitialRegisters() const override {
    return initial_;
  }
  void ReadInitialMemory(Address address, std::span<std::uint8_t> out,
                         std::span<std::uint8_t> known) const override;
  ReaderPosition Tell() const override { return {offset_, next_event_}; }
  Status Seek(const ReaderPosition& pos) override {
    if (pos.offset < events_offset_ || pos.offset > source_->size() || pos.aux > event_count_) {
      return Status::InvalidArgument(source_->name() + ": bad fake reader position " +
                                     HexU64(pos.offset));
    }
    offset_ = pos.offset;
    next_event_ = pos.aux;
    return Status();
  }
  Expected<bool> Next(Event* event) override;

 private:
  Status Corrupt(std::uint64_t offset, std::string_view what) const {
    return Status::Corruption(source_->name() + ": fake trace at offset " + HexU64(offset) + ": " +
                              std::string(what));
  }

  struct Region {
    Address start;
    std::span<const std::uint8_t> bytes, known;
  };
  std::shared_ptr<const ByteSource> source_;
  TraceHeader header_;
  std::vector<std::pair<ThreadId, RegisterFile>> initial_;
  std::vector<Region> regions_;  // sorted by start
  std::uint64_t events_offset_ = 0, event_count_ = 0;
  std::uint64_t offset_ = 0, next_event_ = 0;
  bool copy_data_ = false;
  std::vector<std::vector<std::uint8_t>> copies_;  // one per access of the event
};

Status FakeTraceReader::Parse() {
  const ArchDescription& arch = X86_64();
  ByteReader r(source_->data());
  if (r.String(8) != std::string_view(kMagic, 8)) return Corrupt(0, "bad magic");
  header_.format = kFakeFormatName;
  header_.arch = &arch;
  header_.address_kind = r.U8() ? AddressKind::kPhysical : AddressKind::kVirtual;
  header_.records_reads = r.U8() != 0;
  copy_data_ = r.U8() != 0;
  std::uint32_t threads = r.U32();
  for (std::uint32_t i = 0; i < threads && r.ok(); ++i) {
    ThreadId tid(r.U64());
    auto storage = r.Bytes(r.U32());
    std::uint32_t words = r.U32();
    std::vector<std::uint64_t> known(words);
    for (auto& w : known) w = r.U64();
    RegisterFile file(arch);
    if (!r.ok() || storage.size() != file.raw_storage().size() ||
        words != file.raw_known().size()) {
      return Corrupt(r.offset(), "bad register file");
    }
    file.Restore(storage, known);
    initial_.emplace_back(tid, std::move(file));
  }
  std::uint32_t regions = r.U32();
  for (std::uint32_t i = 0; i < regions && r.ok(); ++i) {
    Region region;
    region.start = r.U64();
    std::uint64_t size = r.U64();
    region.bytes = r.Bytes(size);
    region.known = r.Bytes(size);
    regions_.push_back(region);
    header_.regions.push_back(MemoryRegion{region.start, size, "", "", 0});
  }
  std::sort(regions_.begin(), regions_.end(),
            [](const Region& a, const Region& b) { return a.start < b.start; });
  event_count_ = r.U64();
  if (!r.ok()) return Corrupt(r.offset(), "truncated header");
  header_.declared_events = event_count_;
  events_offset_ = offset_ = r.offset();
  return Status();
}

void FakeTraceReader::ReadInitialMemory(Address address, std::span<std::uint8_t> out,
                                        std::span<std::uint8_t> known) const {
  std::fill(out.begin(), out.end(), 0);
  std::fill(known.begin(), known.end(), 0);
  const Address end = address + out.size();
  for (const Region& region : regions_) {
    const Address rend = region.start + region.bytes.size();
    if (rend <= address || region.start >= end) continue;
    const Address lo = std::max(address, region.start), hi = std::min(end, rend);
    for (Address a = lo; a < hi; ++a) {
      if (region.known[a - region.start]) {
        out[a - address] = region.bytes[a - region.start];
        known[a - address] = 1;
      }
    }
  }
}

Expected<bool> FakeTraceReader::Next(Event* event) {
  event->Clear();
  if (next_event_ >= event_count_) return false;
  ByteReader r(source_->data().subspan(offset_), offset_);
  event->thread = ThreadId(r.U64());
  event->kind = static_cast<EventKind>(r.U8());
  event->flags = r.U32();
  event->description = r.String(r.U16());
  const std::uint16_t regs = r.U16();
  for (std::uint16_t i = 0; i < regs && r.ok(); ++i) {
    RegisterWrite w;
    w.reg = r.U16();
    w.op = static_cast<RegisterOp>(r.U8());
    auto value = r.Bytes(r.U8());
    if (value.size() > sizeof(w.value)) return Corrupt(r.offset(), "register value too long");
    std::memcpy(w.value, value.data(), value.size());
    event->registers.push_back(w);
  }
  std::size_t copies = 0;
  for (auto* list : {&event->writes, &event->reads}) {
    const std::uint16_t n = r.U16();
    for (std::uint16_t i = 0; i < n && r.ok(); ++i) {
      MemoryAccess a;
      a.address = r.U64();
      a.data = r.Bytes(r.U32());
      if (copy_data_) {
        if (copies_.size() <= copies) copies_.emplace_back();
        copies_[copies].assign(a.data.begin(), a.data.end());
        a.data = copies_[copies++];
      }
      list->push_back(a);
    }
  }
  if (!r.ok()) return Corrupt(r.offset(), "truncated event " + std::to_string(next_event_));
  offset_ = r.offset();
  ++next_event_;
  return true;
}

}  // namespace

std::vector<std::uint8_t> SerializeFakeTrace(const FakeTrace& trace) {
  Out out;
  out.Bytes({reinterpret_cast<const std::uint8_t*>(kMagic), 8});
  out.Le(trace.address_kind == AddressKind::kPhysical ? 1 : 0, 1);
  out.Le(trace.records_reads ? 1 : 0, 1);
  out.Le(trace.reader_copies_data ? 1 : 0, 1);
  out.Le(trace.initial_registers.size(), 4);
  for (const auto& [tid, file] : trace.initial_registers) {
    out.Le(tid.value, 8);
    out.Le(file.raw_storage().size(), 4);
    out.Bytes(file.raw_storage());
    out.Le(file.raw_known().size(), 4);
    for (std::uint64_t w : file.raw_known()) out.Le(w, 8);
  }
  out.Le(trace.image.size(), 4);
  for (const FakeImageRegion& region : trace.image) {
    out.Le(region.start, 8);
    out.Le(region.bytes.size(), 8);
    out.Bytes(region.bytes);
    out.Bytes(region.known);
  }
  out.Le(trace.events.size(), 8);
  const ArchDescription& arch = X86_64();
  for (const FakeEvent& e : trace.events) {
    out.Le(e.thread.value, 8);
    out.Le(static_cast<std::uint8_t>(e.kind), 1);
    out.Le(e.flags, 4);
    out.Le(e.description.size(), 2);
    out.Bytes({reinterpret_cast<const std::uint8_t*>(e.description.data()), e.description.size()});
    out.Le(e.registers.size(), 2);
    for (const RegisterWrite& w : e.registers) {
      out.Le(w.reg, 2);
      out.Le(static_cast<std::uint8_t>(w.op), 1);
      const std::uint16_t size = arch.info(w.reg).size;
      out.Le(size, 1);
      out.Bytes({w.value, size});
    }
    PutAccesses(out, e.writes);
    PutAccesses(out, e.reads);
  }
  return std::move(out.bytes);
}

Expected<std::unique_ptr<TraceReader>> OpenFakeTrace(std::shared_ptr<const ByteSource> source) {
  auto reader = std::make_unique<FakeTraceReader>(std::move(source));
  BACKSTEP_RETURN_IF_ERROR(reader->Parse());
  return std::unique_ptr<TraceReader>(std::move(reader));
}

std::shared_ptr<const ByteSource> FakeTraceSource(const FakeTrace& trace, std::string name) {
  return MemorySource(SerializeFakeTrace(trace), std::move(name));
}

Status WriteFakeTraceFile(const FakeTrace& trace, const std::string& path) {
  std::vector<std::uint8_t> bytes = SerializeFakeTrace(trace);
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  f.close();
  if (!f) return Status::IOError(path + ": cannot write fake trace");
  return Status();
}

Expected<FakeTrace> CaptureTrace(TraceReader& reader) {
  FakeTrace t;
  t.address_kind = reader.header().address_kind;
  t.records_reads = reader.header().records_reads;
  t.initial_registers = reader.InitialRegisters();
  for (const MemoryRegion& region : reader.header().regions) {
    FakeImageRegion image;
    image.start = region.start;
    image.bytes.resize(region.size);
    image.known.resize(region.size);
    reader.ReadInitialMemory(region.start, image.bytes, image.known);
    t.image.push_back(std::move(image));
  }
  Event e;
  for (;;) {
    BACKSTEP_ASSIGN_OR_RETURN(bool more, reader.Next(&e));
    if (!more) break;
    FakeEvent f;
    f.thread = e.thread;
    f.kind = e.kind;
    f.flags = e.flags;
    f.description = std::string(e.description);
    f.registers = e.registers;
    for (const MemoryAccess& w : e.writes)
      f.writes.push_back({w.address, {w.data.begin(), w.data.end()}});
    for (const MemoryAccess& r : e.reads)
      f.reads.push_back({r.address, {r.data.begin(), r.data.end()}});
    t.events.push_back(std::move(f));
  }
  return t;
}

Expected<std::shared_ptr<Trace>> OpenFakeInMemory(const FakeTrace& trace,
                                                  const OpenOptions& options) {
  std::shared_ptr<const ByteSource> source = FakeTraceSource(trace);
  return Trace::OpenWith([source] { return OpenFakeTrace(source); }, "", options);
}

Expected<std::shared_ptr<Trace>> OpenFakeFile(const std::string& path, const OpenOptions& options) {
  BACKSTEP_ASSIGN_OR_RETURN(std::shared_ptr<const ByteSource> source, MapFile(path));
  return Trace::OpenWith([source] { return OpenFakeTrace(source); }, path, options);
}

}  // namespace backstep::core::testing
