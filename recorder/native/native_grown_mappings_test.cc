// A file mapping that mremap grows shows the file's next bytes in the grown
// pages; the native engine's trace must hold them as the ptrace engine's
// does (materialization maps anonymous memory, which grows with zeros: the
// record phase logs the grown pages' contents). A program (growmaps.c,
// static) maps the first page of a 3-page file and grows it to 3 pages, in
// place, then again moving it; recorded with the ptrace engine and natively
// (the same run: native_crosscheck_test.cc's inputs), the log materialized
// in one pass and in intervals: after each mremap, the 3 pages at its
// result hold the file ('a', 'b', 'c') in the ptrace engine's trace (the
// ground truth) and the same bytes in the native engine's, and each
// materialized trace is the ptrace engine's position by position
// (trace_compare_test_util.h: the registers that summed those bytes too).
#include <gtest/gtest.h>

#include <cstdio>
#include <string>
#include <vector>

#include "backstep/core/byte_source.h"
#include "backstep/core/format_registry.h"
#include "recorder/crosscheck_test_util.h"
#include "recorder/native/native_crosscheck_util.h"
#include "recorder/native/native_test_util.h"
#include "recorder/replayed_state_test_util.h"
#include "recorder/trace_compare_test_util.h"

namespace backstep::record {
namespace {

constexpr std::uint64_t kPage = 4096;

// What a trace shows after one mremap: its result and, for each of the 3
// pages there, "0x61 x4096" when one byte fills it, else its first bytes.
struct GrownMapping {
  std::uint64_t address = 0;
  std::vector<std::string> pages;
  bool operator==(const GrownMapping&) const = default;
};

void PrintTo(const GrownMapping& g, std::ostream* os) {
  *os << std::hex << "0x" << g.address << std::dec << ":";
  for (const std::string& p : g.pages) *os << " [" << p << "]";
}

std::string DescribePage(const test_util::ReplayedState& state, std::uint64_t start) {
  const std::uint8_t first = state.ByteOrZero(start);
  char text[64];
  std::uint64_t same = 1;
  while (same < kPage && state.ByteOrZero(start + same) == first) ++same;
  if (same == kPage) {
    std::snprintf(text, sizeof text, "0x%02x x%llu", first, static_cast<unsigned long long>(kPage));
  } else {
    std::snprintf(text, sizeof text, "0x%02x x%llu, then 0x%02x...", first,
                  static_cast<unsigned long long>(same), state.ByteOrZero(start + same));
  }
  return text;
}

// The trace at `path` replayed: what it shows after each mremap.
std::vector<GrownMapping> AfterMremaps(const std::string& path) {
  std::vector<GrownMapping> out;
  auto source = core::MapFile(path);
  EXPECT_TRUE(source.ok()) << path;
  if (!source.ok()) return out;
  auto reader = core::OpenTraceSource(*source);
  EXPECT_TRUE(reader.ok()) << reader.status().message();
  if (!reader.ok()) return out;
  test_util::ReplayedState state(**reader);
  core::Event e;
  while (true) {
    core::Expected<bool> more = (*reader)->Next(&e);
    if (!more.ok() || !*more) break;
    state.Apply(e);
    if (e.description.rfind("syscall 25(", 0) != 0) continue;
    GrownMapping& g = out.emplace_back();
    g.address = state.U64("rax");
    for (std::uint64_t k = 0; k < 3; ++k)
      g.pages.push_back(DescribePage(state, g.address + k * kPage));
  }
  return out;
}

TEST(NativeGrownMappings, GrownFilePagesHoldTheFileAsInThePtraceTrace) {
  const test_util::CrossCheckCase program{"growmaps_O2_static", {}};
  const std::string base = ::testing::TempDir() + "/grown_mappings";
  const std::string single = base + ".single.ucir", joined = base + ".joined.ucir";
  test_util::BothEngines run;
  // Intervals, one of them with the mremaps.
  test_util::RecordWithBothEngines(program, base, /*snapshot_syscalls=*/4, &run);
  if (HasFatalFailure()) return;
  ASSERT_EQ(run.ptrace.result.exit_code, 0);

  // The ground truth: both mremaps grew the file's first page into its 3 pages.
  const std::vector<GrownMapping> truth = AfterMremaps(run.ptrace.path);
  ASSERT_EQ(truth.size(), 2u);
  const std::vector<std::string> file = {"0x61 x4096", "0x62 x4096", "0x63 x4096"};
  EXPECT_EQ(truth[0].pages, file);
  EXPECT_EQ(truth[1].pages, file);
  EXPECT_NE(truth[0].address, truth[1].address);

  // Also when a pass diverged (the registers that read zeros differ at the
  // next call).
  test_util::MaterializeBothWaysAndCompare(run, single, joined,
                                           [&](const std::string& trace, const char* what) {
                                             EXPECT_EQ(AfterMremaps(trace), truth) << what;
                                           });
  if (HasFailure()) return;
  test_util::RemoveRunFiles(run, {single, joined});
}

}  // namespace
}  // namespace backstep::record
