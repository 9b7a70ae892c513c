// backstep info TRACE
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <unordered_set>

#include "backstep/core/cursor.h"
#include "backstep/core/hex.h"
#include "backstep/core/trace.h"
#include "backstep/core/trace_query.h"
#include "cli/cli.h"
#include "cli/open_trace.h"

namespace backstep::cli {
namespace {

// Limits of the memory coverage scan, which streams events (the index has
// no list of touched bytes): `info` stays quick on long traces and says
// when it looked at a prefix only.
constexpr std::uint64_t kCoverageEvents = 200000;
constexpr std::size_t kCoverageBytes = std::size_t{1} << 22;

// Threads with the first and last event each executes (index runs, O(log)).
void PrintThreads(const core::Trace& t) {
  const std::vector<core::ThreadSpan> threads = core::ThreadSpans(t);
  std::printf("threads:       %zu\n", threads.size());
  const std::size_t kMaxThreads = 32;
  for (std::size_t i = 0; i < threads.size() && i < kMaxThreads; ++i) {
    const core::ThreadSpan& span = threads[i];
    std::printf("  thread %llu: ", static_cast<unsigned long long>(span.thread.value));
    if (span.first && span.last) {
      std::printf("events %llu..%llu\n", static_cast<unsigned long long>(*span.first),
                  static_cast<unsigned long long>(*span.last));
    } else {
      std::printf("no events\n");
    }
  }
  if (threads.size() > kMaxThreads) std::printf("  ... %zu more\n", threads.size() - kMaxThreads);
}

double Percent(std::uint64_t part, std::uint64_t whole) {
  return whole == 0 ? 100.0 : 100.0 * static_cast<double>(part) / static_cast<double>(whole);
}

// Known-state coverage at the end of the trace: gdb registers known per
// thread, and touched bytes (read or written by the scanned events) known.
core::Status PrintCoverage(const core::Trace& t) {
  BACKSTEP_ASSIGN_OR_RETURN(std::unique_ptr<core::Cursor> cursor, t.NewCursor());
  BACKSTEP_RETURN_IF_ERROR(cursor->Seek(core::Position(t.event_count())));
  const core::ArchDescription& arch = t.arch();
  const auto layout = arch.GdbLayout(core::DefaultGdbFeatures(arch));
  std::uint64_t known_regs = 0, total_regs = 0;
  std::string per_thread;
  std::vector<std::uint8_t> buf;
  for (core::ThreadId thread : t.threads()) {
    BACKSTEP_ASSIGN_OR_RETURN(const core::RegisterFile* regs, cursor->Registers(thread));
    std::uint64_t known = 0;
    for (const core::GdbSlot& slot : layout) {
      buf.assign(slot.size, 0);
      known += regs->Read(slot.reg, buf) ? 1 : 0;
    }
    known_regs += known;
    total_regs += layout.size();
    per_thread += " " + std::to_string(thread.value) + ":" + std::to_string(known) + "/" +
                  std::to_string(layout.size());
  }
  std::printf(
      "coverage:      registers %llu of %llu known at the end (%.1f%%; thread:known/all%s)\n",
      static_cast<unsigned long long>(known_regs), static_cast<unsigned long long>(total_regs),
      Percent(known_regs, total_regs), per_thread.c_str());

  BACKSTEP_ASSIGN_OR_RETURN(std::unique_ptr<core::TraceReader> reader, t.NewReader());
  std::unordered_set<core::Address> touched;
  core::Event event;
  std::uint64_t scanned = 0;
  bool full = false;
  while (scanned < kCoverageEvents && !full) {
    BACKSTEP_ASSIGN_OR_RETURN(bool more, reader->Next(&event));
    if (!more) break;
    ++scanned;
    for (const auto* list : {&event.reads, &event.writes}) {
      for (const core::MemoryAccess& a : *list) {
        for (std::size_t i = 0; i < a.data.size() && !full; ++i) {
          touched.insert(a.address + i);
          full = touched.size() >= kCoverageBytes;
        }
      }
    }
  }
  std::vector<core::Address> bytes(touched.begin(), touched.end());
  std::sort(bytes.begin(), bytes.end());
  std::uint64_t known_bytes = 0;
  std::uint8_t value = 0, known = 0;
  for (core::Address a : bytes) {
    // NOTE: one byte at a time, cheap next to the event scan; accesses are
    // in the trace's address space (physical for REVEN).
    if (cursor->ReadMemory(a, std::span(&value, 1), std::span(&known, 1), t.header().address_kind)
            .ok() &&
        known) {
      ++known_bytes;
    }
  }
  std::printf("               memory %llu of %llu touched bytes known at the end (%.1f%%)",
              static_cast<unsigned long long>(known_bytes),
              static_cast<unsigned long long>(bytes.size()), Percent(known_bytes, bytes.size()));
  if (scanned < t.event_count()) {
    std::printf(", over the first %llu events", static_cast<unsigned long long>(scanned));
  }
  std::printf("\n");
  return core::Status::Ok();
}

}  // namespace

int RunInfo(Args& args) {
  auto files = args.Positionals();
  if (files.size() != 1) return Usage("info takes one trace file");
  auto trace = OpenTraceForCli(files[0], args);
  if (!trace.ok()) return Fail(trace.status());
  if (auto problem = args.Problem()) return Usage(*problem);
  const core::Trace& t = **trace;
  const core::TraceHeader& h = t.header();

  std::printf("file:          %s\n", t.path().c_str());
  std::printf("format:        %s\n", h.format.c_str());
  std::printf("architecture:  %.*s\n", static_cast<int>(h.arch->name().size()),
              h.arch->name().data());
  std::printf("memory:        %s addresses\n",
              h.address_kind == core::AddressKind::kPhysical ? "physical" : "virtual");
  std::printf("events:        %llu (positions 0..%llu)\n",
              static_cast<unsigned long long>(t.event_count()),
              static_cast<unsigned long long>(t.event_count()));
  if (h.declared_events && *h.declared_events != t.event_count()) {
    std::printf("               (the file declares %llu)\n",
                static_cast<unsigned long long>(*h.declared_events));
  }
  PrintThreads(t);
  std::printf("reads:         %s\n", h.records_reads ? "recorded (rwatch/awatch available)"
                                                     : "not recorded (rwatch/awatch are refused)");

  std::uint64_t total = 0;
  for (const auto& r : h.regions) total += r.size;
  std::printf("regions:       %zu, %s bytes\n", h.regions.size(), core::HexU64(total).c_str());
  const std::size_t kMaxRegions = 32;
  for (std::size_t i = 0; i < h.regions.size() && i < kMaxRegions; ++i) {
    const auto& r = h.regions[i];
    std::printf("  %s-%s %s\n", core::HexPadded(r.start, 12).c_str(),
                core::HexPadded(r.start + r.size, 12).c_str(), r.name.c_str());
  }
  if (h.regions.size() > kMaxRegions) {
    std::printf("  ... %zu more\n", h.regions.size() - kMaxRegions);
  }
  for (const auto& [key, value] : h.properties) {
    std::printf("%-14s %s\n", (key + ":").c_str(), value.c_str());
  }

  const core::IndexStatus& idx = t.index_status();
  std::printf("index:         %s\n", idx.path.c_str());
  std::printf("index status:  %s\n", IndexStatusText(idx).c_str());
  std::printf("index size:    %llu bytes", static_cast<unsigned long long>(idx.size_bytes));
  std::error_code ec;
  if (auto trace_size = std::filesystem::file_size(t.path(), ec); !ec && trace_size != 0) {
    std::printf(" (%.1f%% of the trace)", 100.0 * idx.size_bytes / trace_size);
  }
  std::printf("\n");
  std::printf("index summary: %llu keyframes every %llu events, %zu threads, reads %s\n",
              static_cast<unsigned long long>(core::KeyframeCount(t)),
              static_cast<unsigned long long>(core::KeyframeInterval(t)),
              core::ThreadSpans(t).size(), core::IndexRecordsReads(t) ? "indexed" : "none");
  if (auto status = PrintCoverage(t); !status.ok()) return Fail(status);
  return 0;
}

}  // namespace backstep::cli
