// Fuzzes the index reader: the input is an index file of one of two fixed
// generated traces, sealed (identity and checksum made valid, see
// index_fuzz.h) so that the structural checks of TraceIndex::Parse and the
// bounded decoders are what stands between the bytes and the queries. Each accepted index is
// queried the way a cursor and the searches do: threads and runs, keyframe
// registers, clears, the pc index, every access list on a few pages.
#include "backstep/testing/index_fuzz.h"

#include <algorithm>
#include <cstring>
#include <memory>

#include "backstep/core/register_file.h"
#include "backstep/testing/fake_trace.h"
#include "backstep/testing/fake_trace_generator.h"
#include "index/index_builder.h"
#include "index/index_hash.h"
#include "index/index_sink.h"
#include "index/trace_index.h"

namespace backstep::core::testing {
namespace {

constexpr std::uint64_t kInterval = 50;
volatile std::uint64_t sink;  // keeps the answers from being optimized away

struct Fixture {
  std::shared_ptr<const ByteSource> trace;
  std::unique_ptr<TraceReader> reader;
  IndexIdentity identity;
};

// The fixed traces: [0] references its accesses' data in the trace file;
// [1] is read through copies (as decompressing formats are) and writes
// counters, so its short writes are inline in the index and take the XOR
// forms.
constexpr int kFixtures = 2;

const Fixture& FixtureNumber(int n) {
  static const Fixture* fixtures = [] {
    auto* all = new Fixture[kFixtures];
    for (int i = 0; i < kFixtures; ++i) {
      FakeTraceOptions o;
      o.events = i == 0 ? 300 : 600;
      o.threads = 2;
      o.records_reads = true;
      o.clears = true;
      o.full_image = false;
      o.notes = true;  // the noted events' section
      o.reader_copies_data = i == 1;
      FakeTrace trace = GenerateFakeTrace(o);
      if (i == 1) {
        // Counters instead of random bytes: short writes differ from the
        // data before them in their low byte (the XOR forms).
        std::uint8_t counter = 0;
        for (FakeEvent& e : trace.events) {
          for (FakeAccess& w : e.writes) {
            std::fill(w.data.begin(), w.data.end(), 0);
            w.data[0] = ++counter;
          }
        }
      }
      Fixture& f = all[i];
      f.trace = FakeTraceSource(std::move(trace), "fuzz.fake");
      f.reader = std::move(OpenFakeTrace(f.trace).value());
      f.identity.trace_size = f.trace->data().size();
      f.identity.trace_hash = TraceHash(f.trace->data());
      f.identity.format = f.reader->header().format;
      f.identity.keyframe_interval = kInterval;
      f.identity.arch_signature = ArchSignature(*f.reader->header().arch);
    }
    return all;
  }();
  return fixtures[n];
}

// The fixture an index names by its header's trace size (the seeds carry
// their fixture's; mutations mostly keep it), else the first.
const Fixture& FixtureOf(const std::vector<std::uint8_t>& bytes) {
  if (bytes.size() >= sizeof(IndexHeader)) {
    const auto header = LoadRecord<IndexHeader>(bytes.data());
    for (int i = 0; i < kFixtures; ++i) {
      if (FixtureNumber(i).identity.trace_size == header.trace_size) return FixtureNumber(i);
    }
  }
  return FixtureNumber(0);
}

void Query(const TraceIndex& index, const ArchDescription& arch) {
  const std::uint64_t n = index.event_count();
  std::uint64_t total = 0;
  for (std::uint64_t e : {std::uint64_t(0), n / 2, n ? n - 1 : 0}) {
    if (e < n) total += index.ThreadIndexAt(e);
    for (std::size_t t = 0; t < index.thread_count(); ++t) {
      total += index.NextEventOfThread(t, e).value_or(1);
      total += index.PrevEventOfThread(t, e + 1).value_or(2);
    }
    total += index.LastMemoryClearBefore(e).value_or(3) + index.NextMemoryClearFrom(e).value_or(4);
  }
  std::vector<RegisterFile> files(index.thread_count(), RegisterFile(arch));
  for (std::uint64_t k = 0; k < index.keyframe_count() && k < 16; ++k) {
    index.RestoreKeyframe(k, files);
    total += index.KeyframeReaderPosition(k).offset;
  }
  for (Address pc : {Address(0x401000), Address(0x401004), Address(0x401010)}) {
    total += index.NextPc(pc, 0).value_or(5) + index.PrevPc(pc, n).value_or(6);
    total += index.CountPc(pc, 0, n) + index.NextPcInRange(pc, pc + 64, 0).value_or(7);
  }
  for (int list = 0; list < kAccessListCount; ++list) {
    const auto kind = static_cast<AccessListKind>(list);
    for (std::uint64_t page : index.ListedPages(kind, 0, ~std::uint64_t(0) >> kPageBits)) {
      if (page > 64) break;  // a few pages, whichever the index lists first
      const Address lo = page << kPageBits, hi = lo + kPageSize;
      if (auto hit = index.NextAccess(kind, lo, hi, 0, nullptr); hit.ok() && *hit) {
        total += (*hit)->entry.length;
        const auto piece = index.FindPiece(kind, page, (*hit)->entry.event, 0);
        total += piece ? piece->entry.length : 0;
      }
      if (auto hit = index.PrevAccess(kind, lo, hi, n, nullptr); hit.ok() && *hit) {
        total += (*hit)->data[0] * std::uint64_t((*hit)->entry.length > 0);
      }
      index.ScanAccesses(kind, lo, hi, 0, n, [&](const AccessHit& h) {
        for (std::uint32_t i = 0; i < h.entry.length; ++i) total += h.data[i];
        return true;
      });
      std::uint8_t values[kPageSize], known[kPageSize] = {};
      index.WriteState(lo, hi, 0, n, values, known);
      index.InferredState(lo, hi, 0, n, values, known);
      for (std::uint64_t i = 0; i < kPageSize; ++i) total += known[i] ? values[i] : 0;
    }
  }
  for (std::uint64_t i = 0; i < index.note_count(); ++i) {
    const TraceIndex::Note note = index.note(i);
    total += note.event + note.kind;
    for (char c : note.description) total += static_cast<unsigned char>(c);
  }
  const PlainSyscalls plain = index.plain_syscalls();
  std::vector<PlainSyscall> block;
  for (std::uint64_t b = 0; b < plain.block_count(); ++b) {
    plain.Decode(b, &block);
    for (const PlainSyscall& call : block) total += call.event + call.number + call.thread.value;
    total += plain.BlockAt(plain.block_first_event(b));
  }
  sink = total;
}

}  // namespace

void SealIndex(std::vector<std::uint8_t>& bytes) {
  if (bytes.size() < kHeaderSize + kFooterSize) return;
  const IndexIdentity& id = FixtureOf(bytes).identity;
  auto header = LoadRecord<IndexHeader>(bytes.data());
  header.trace_size = id.trace_size;
  header.trace_mtime_ns = id.trace_mtime_ns;
  header.trace_hash = id.trace_hash;
  header.keyframe_interval = id.keyframe_interval;
  header.arch_signature = id.arch_signature;
  std::memset(header.format, 0, sizeof(header.format));
  std::memcpy(header.format, id.format.data(), std::min(id.format.size(), sizeof(header.format)));
  std::memcpy(bytes.data(), &header, sizeof(header));
  const std::size_t footer_at = bytes.size() - kFooterSize;
  auto footer = LoadRecord<IndexFooter>(bytes.data() + footer_at);
  footer.file_size = bytes.size();
  if (footer.directory_offset <= footer_at)
    footer.directory_size = footer_at - footer.directory_offset;
  Hash64 hash;
  hash.Update({bytes.data(), footer_at});
  std::memcpy(bytes.data() + footer_at, &footer, sizeof(footer));
  hash.Update({bytes.data() + footer_at, 24});
  footer.checksum = hash.Digest();
  std::memcpy(bytes.data() + footer_at, &footer, sizeof(footer));
}

int FuzzIndex(const std::uint8_t* data, std::size_t size) {
  std::vector<std::uint8_t> bytes(data, data + size);
  const Fixture& f = FixtureOf(bytes);
  SealIndex(bytes);
  if (!ValidateIndex(bytes, f.identity).empty()) return 0;
  auto owned = std::make_shared<std::vector<std::uint8_t>>(std::move(bytes));
  auto index = TraceIndex::Open(owned, *owned, f.trace->data());
  if (!index.ok()) return 0;
  Query(**index, *f.reader->header().arch);
  return 0;
}

std::vector<std::vector<std::uint8_t>> IndexSeedFiles() {
  std::vector<std::vector<std::uint8_t>> seeds;
  for (int i = 0; i < kFixtures; ++i) {
    const Fixture& f = FixtureNumber(i);
    auto reader = OpenFakeTrace(f.trace);
    VectorIndexSink out;
    IndexBuildOptions options;
    if (!reader.ok() || !BuildIndex(**reader, f.identity, options, out).ok()) return {};
    seeds.push_back(out.bytes());
  }
  return seeds;
}

}  // namespace backstep::core::testing
