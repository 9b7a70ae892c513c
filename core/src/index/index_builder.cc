#include "index/index_builder.h"

#include <algorithm>
#include <cstring>
#include <thread>
#include <vector>

#include "index/index_parallel.h"
#include "index/index_part_builder.h"

namespace backstep::core {
namespace {

Status SinglePass(TraceReader& reader, const IndexIdentity& identity,
                  const IndexBuildOptions& options, IndexSink& sink) {
  const std::uint64_t total = reader.header().declared_events.value_or(0);
  WriteIndexHeader(identity, sink);
  IndexPartPlan plan;
  plan.seed = reader.InitialRegisters();
  plan.seed_is_initial = true;
  plan.keyframe_interval = identity.keyframe_interval;
  plan.memory_budget = options.memory_budget;
  plan.block_entries = options.block_entries;
  plan.snapshot_blocks = options.snapshot_blocks;
  plan.event_refs = static_cast<bool>(options.new_reader);
  if (options.progress) {
    plan.progress = [&](std::uint64_t done) { return options.progress("indexing", done, total); };
  }
  IndexTables tables;
  BACKSTEP_RETURN_IF_ERROR(BuildIndexPart(reader, plan, sink, &tables));
  WriteIndexDirectory(tables, reader.header(), options, sink);
  if (options.progress) options.progress("indexing", tables.end_event, tables.end_event);
  return sink.status();
}

unsigned PartsWanted(const IndexBuildOptions& options) {
  if (options.parts != 0) return std::min(options.parts, kMaxIndexParts);
  const unsigned cores = std::thread::hardware_concurrency();
  return std::clamp(cores, 1u, kMaxIndexParts);
}

// The resume points nearest to k/parts of the trace, k = 1..parts-1,
// strictly increasing and inside the trace.
std::vector<ResumePoint> ChooseSplits(std::vector<ResumePoint> points, unsigned parts,
                                      std::optional<std::uint64_t> declared) {
  std::vector<ResumePoint> out;
  std::erase_if(points, [&](const ResumePoint& p) {
    return p.position.value == 0 || (declared && p.position.value >= *declared);
  });
  if (points.empty()) return out;
  std::sort(points.begin(), points.end(), [](const ResumePoint& a, const ResumePoint& b) {
    return a.position.value < b.position.value;
  });
  // Without a declared count, assume the points are evenly spread.
  const std::uint64_t total =
      declared ? *declared
               : points.back().position.value + points.back().position.value / points.size();
  std::size_t next = 0;
  for (unsigned k = 1; k < parts && next < points.size(); ++k) {
    const std::uint64_t target = total / parts * k + total % parts * k / parts;
    std::size_t best = next;
    auto distance = [&](std::size_t i) {
      const std::uint64_t p = points[i].position.value;
      return p > target ? p - target : target - p;
    };
    for (std::size_t i = next; i < points.size(); ++i) {
      if (distance(i) < distance(best)) best = i;
    }
    out.push_back(std::move(points[best]));
    next = best + 1;
  }
  return out;
}

}  // namespace

void WriteIndexHeader(const IndexIdentity& identity, IndexSink& sink) {
  IndexHeader h{};
  std::memcpy(h.magic, kIndexMagic, 8);
  h.version = kIndexVersion;
  h.header_size = kHeaderSize;
  h.trace_size = identity.trace_size;
  h.trace_mtime_ns = identity.trace_mtime_ns;
  h.trace_hash = identity.trace_hash;
  h.keyframe_interval = identity.keyframe_interval;
  h.arch_signature = identity.arch_signature;
  std::memcpy(h.format, identity.format.data(), std::min(identity.format.size(), sizeof(h.format)));
  sink.WriteRecord(h);
}

void WriteIndexDirectory(IndexTables& tables, const TraceHeader& trace,
                         const IndexBuildOptions& options, IndexSink& sink) {
  std::vector<ThreadRecord> threads;
  for (IndexTables::Thread& t : tables.threads) {
    t.out.runs_offset = sink.size();
    t.out.run_count = t.runs.size();
    sink.WriteRecords<std::uint64_t>(t.runs);
    threads.push_back(t.out);
  }
  IndexDirectory dir{};
  dir.event_count = tables.end_event;
  dir.thread_count = threads.size();
  dir.run_count = tables.runs.size();
  dir.keyframe_count = tables.keyframes.size();
  dir.memory_clear_count = tables.memory_clears.size();
  dir.register_clear_count = tables.register_clears.size();
  dir.segment_count = tables.segments.size();
  RegisterFile probe(*trace.arch);
  dir.register_storage_size = probe.raw_storage().size();
  dir.register_known_words = probe.raw_known().size();
  dir.flags = (trace.address_kind == AddressKind::kPhysical ? kDirPhysical : 0) |
              (tables.records_reads ? kDirRecordsReads : 0) |
              (tables.records_reads && !trace.read_values ? kDirReadsWithoutData : 0) | kDirNotes;
  dir.block_entries = options.block_entries;
  dir.snapshot_blocks = options.snapshot_blocks;
  dir.note_count = tables.notes.size();
  dir.note_text_size = tables.note_text.size();
  dir.plain_syscall_count = tables.plain_syscalls.count();
  dir.plain_syscall_stream_size = tables.plain_syscalls.stream().size();
  const std::uint64_t dir_offset = sink.size();
  sink.WriteRecord(dir);
  sink.WriteRecords<ThreadRecord>(threads);
  sink.WriteRecords<RunRecord>(tables.runs);
  sink.WriteRecords<KeyframeRecord>(tables.keyframes);
  sink.WriteRecords<std::uint64_t>(tables.memory_clears);
  sink.WriteRecords<RegisterClearRecord>(tables.register_clears);
  sink.WriteRecords<SegmentRecord>(tables.segments);
  sink.WriteRecords<NoteRecord>(tables.notes);
  sink.Write(
      {reinterpret_cast<const std::uint8_t*>(tables.note_text.data()), tables.note_text.size()});
  sink.Pad8();
  sink.WriteRecords<SyscallSkipRecord>(tables.plain_syscalls.skips());
  sink.Write(tables.plain_syscalls.stream());
  sink.Pad8();
  IndexFooter footer{};
  footer.directory_offset = dir_offset;
  footer.directory_size = sink.size() - dir_offset;
  footer.file_size = sink.size() + kFooterSize;
  std::memcpy(footer.magic, kFooterMagic, 8);
  Hash64 hash = sink.hash();
  hash.Update({reinterpret_cast<const std::uint8_t*>(&footer), 24});
  footer.checksum = hash.Digest();
  sink.WriteUnhashed({reinterpret_cast<const std::uint8_t*>(&footer), kFooterSize});
}

std::uint64_t TraceHash(std::span<const std::uint8_t> bytes) {
  constexpr std::size_t kEdge = 64 << 10;
  Hash64 h(bytes.size());
  h.Update(bytes.first(std::min(bytes.size(), kEdge)));
  h.Update(bytes.last(std::min(bytes.size(), kEdge)));
  return h.Digest();
}

std::uint64_t ArchSignature(const ArchDescription& arch) {
  Hash64 h(arch.register_count());
  h.Update({reinterpret_cast<const std::uint8_t*>(arch.name().data()), arch.name().size()});
  const std::uint64_t sizes[2] = {arch.storage_size(), RegisterFile(arch).raw_known().size()};
  h.Update({reinterpret_cast<const std::uint8_t*>(sizes), sizeof(sizes)});
  return h.Digest();
}

Status BuildIndex(TraceReader& reader, const IndexIdentity& identity,
                  const IndexBuildOptions& options, IndexSink& sink) {
  IndexBuildReport report;
  const unsigned parts = PartsWanted(options);
  Status status;
  bool written = false;
  if (parts > 1) {
    if (!options.new_reader) {
      report.note = "no way to open more readers";
    } else {
      std::vector<ResumePoint> splits =
          ChooseSplits(reader.ResumePoints(), parts, reader.header().declared_events);
      if (splits.empty()) {
        report.note = "no resume points";
      } else {
        status = BuildIndexInParallel(reader, identity, options, std::move(splits), sink, &report,
                                      &written);
      }
    }
  }
  if (!written && status.ok()) {
    report.parts = 1;
    status = SinglePass(reader, identity, options, sink);
  }
  if (options.report) *options.report = report;
  return status;
}

}  // namespace backstep::core
