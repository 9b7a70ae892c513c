// The native engine names file mappings as the ptrace engine does: a
// dynamic program (filemaps.c, PIE: ld.so maps libc and, through dlopen,
// libm; the program maps its own executable, then splits, unmaps, moves,
// shrinks and replaces pieces of those mappings) recorded with the ptrace
// engine and natively (the same run: the crosscheck's inputs, pid 2 of a
// new PID namespace), the log materialized in one pass and in intervals two
// at a time: after every system call and at the end, each trace's mapping
// timeline (backstep/core/mappings.h) gives the same files at the same
// addresses from the same offsets with the same permissions (the ptrace
// engine's trace, from /proc/PID/maps, is the ground truth), and the
// joined intervals are the single pass byte for byte.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <sstream>
#include <string>
#include <vector>

#include "backstep/core/byte_source.h"
#include "backstep/core/format_registry.h"
#include "backstep/core/mappings.h"
#include "backstep/core/trace.h"
#include "recorder/crosscheck_test_util.h"
#include "recorder/native/mapping_names.h"
#include "recorder/native/native_crosscheck_util.h"
#include "recorder/native/native_test_util.h"
#include "recorder/one_cpu.h"

namespace backstep::record {
namespace {

// A trace's file mappings (named by a path) at each position asked for,
// adjacent pieces of one file at consecutive offsets with the same
// permissions joined (how the kernel cuts them into areas may differ).
class FileMaps {
 public:
  explicit FileMaps(const std::string& path) {
    auto trace = core::Trace::Open(path);
    if (!trace.ok()) {
      error_ = trace.status().message();
      return;
    }
    trace_ = *trace;
  }
  const std::string& error() const { return error_; }
  std::uint64_t event_count() const { return trace_->event_count(); }

  std::string At(std::uint64_t position) const {
    auto maps = trace_->mappings().At(core::Position(position));
    if (!maps.ok()) return "error: " + maps.status().message();
    std::vector<core::Mapping> files;
    for (const core::Mapping& m : *maps) {
      if (m.name.empty() || m.name[0] == '[') continue;
      if (!files.empty() && files.back().end() == m.start && files.back().name == m.name &&
          files.back().permissions == m.permissions &&
          files.back().file_offset + files.back().size == m.file_offset) {
        files.back().size += m.size;
        continue;
      }
      files.push_back(m);
    }
    std::ostringstream out;
    out << std::hex;
    for (const core::Mapping& m : files) {
      out << "0x" << m.start << "-0x" << m.end() << " " << m.permissions << " 0x" << m.file_offset
          << " " << m.name << "\n";
    }
    return out.str();
  }

 private:
  std::shared_ptr<core::Trace> trace_;
  std::string error_;
};

// The position after each system call event of `trace`.
std::vector<std::uint64_t> AfterSyscalls(const std::string& trace) {
  std::vector<std::uint64_t> out;
  std::uint64_t i = 0;
  test_util::ForEachEvent(trace, [&](const core::Event& e) {
    ++i;
    if (e.description.rfind("syscall ", 0) == 0) out.push_back(i);
  });
  return out;
}

std::string FileBytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// Expects `trace`'s file mappings to be `truth`'s after every system call
// and at the end; the number of positions where libc is mapped.
std::size_t ExpectSameFileMappings(const std::string& truth, const std::string& trace,
                                   const char* name) {
  SCOPED_TRACE(name);
  const FileMaps a(truth), b(trace);
  EXPECT_EQ(a.error(), "");
  EXPECT_EQ(b.error(), "");
  if (!a.error().empty() || !b.error().empty()) return 0;
  std::vector<std::uint64_t> at_a = AfterSyscalls(truth), at_b = AfterSyscalls(trace);
  EXPECT_EQ(at_a.size(), at_b.size());
  at_a.push_back(a.event_count());
  at_b.push_back(b.event_count());
  std::size_t with_libc = 0;
  for (std::size_t k = 0; k < std::min(at_a.size(), at_b.size()); ++k) {
    const std::string want = a.At(at_a[k]), got = b.At(at_b[k]);
    EXPECT_EQ(got, want) << "after system call #" << k << " (position " << at_b[k] << "; "
                         << at_a[k] << " in the ptrace trace)";
    if (got != want) break;
    with_libc += want.find("/libc.so.6\n") != std::string::npos;
  }
  return with_libc;
}

TEST(NativeMappingNames, FileMappingsAreNamedAsByThePtraceEngine) {
  const test_util::CrossCheckCase program{"filemaps_O0_pie", {}};
  BACKSTEP_SKIP_PIE_WITHOUT_RDTSC_FAULTING(program.name);
  const std::string base = ::testing::TempDir() + "/mapping_names";
  const std::string single = base + ".single.ucir", joined = base + ".joined.ucir";
  test_util::BothEngines run;
  // Intervals that start with files mapped.
  test_util::RecordWithBothEngines(program, base, /*snapshot_syscalls=*/4, &run);
  if (HasFatalFailure()) return;
  // The log names the files ld.so and the program mapped.
  std::size_t named = 0;
  for (const LoggedSyscall& s : run.log.syscalls) named += s.mapped.has_value();
  EXPECT_GE(named, 8u);
  // Some interval starts where a file is mapped.
  ASSERT_GE(run.log.snapshots.size(), 3u);
  EXPECT_FALSE(MappingNames::After(run.log, run.log.snapshots[1].syscall).ranges().empty());

  MaterializeOptions one_pass;
  one_pass.use_snapshots = false;
  core::Expected<RecordResult> s = test_util::MaterializeTo(run.log, single, one_pass);
  ASSERT_TRUE(s.ok()) << s.status().message();
  EXPECT_EQ(s->syscalls, run.ptrace.result.syscalls);
  EXPECT_GT(ExpectSameFileMappings(run.ptrace.path, single, "single pass"), 10u);
  if (HasFailure()) return;

  MaterializeOptions parallel;
  parallel.jobs = 2;
  core::Expected<RecordResult> j = test_util::MaterializeTo(run.log, joined, parallel);
  ASSERT_TRUE(j.ok()) << j.status().message();
  const std::string expected = FileBytes(single), got = FileBytes(joined);
  ASSERT_EQ(got.size(), expected.size());
  const auto diff = std::mismatch(got.begin(), got.end(), expected.begin());
  EXPECT_TRUE(diff.first == got.end())
      << "first different byte at offset " << (diff.first - got.begin());
  EXPECT_GT(ExpectSameFileMappings(run.ptrace.path, joined, "joined intervals"), 10u);
  if (HasFailure()) return;
  test_util::RemoveRunFiles(run, {single, joined});
}

}  // namespace
}  // namespace backstep::record
