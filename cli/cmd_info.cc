// backstep info TRACE
#include <cstdio>
#include <filesystem>

#include "backstep/core/hex.h"
#include "backstep/core/trace.h"
#include "cli/cli.h"
#include "cli/open_trace.h"

namespace backstep::cli {

int RunInfo(Args& args) {
  auto files = args.Positionals();
  if (files.size() != 1) return Usage("info takes one trace file");
  auto trace = OpenTraceForCli(files[0], args);
  if (!trace.ok()) return Fail(trace.status());
  if (auto unknown = args.UnknownOption()) return Usage("unknown option " + *unknown);
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
  auto threads = t.threads();
  std::printf("threads:       %zu:", threads.size());
  for (auto tid : threads) std::printf(" %llu", static_cast<unsigned long long>(tid.value));
  std::printf("\n");
  std::printf("reads:         %s\n", h.records_reads ? "recorded" : "not recorded");

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
  return 0;
}

}  // namespace backstep::cli
