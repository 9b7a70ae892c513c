// SysV shared memory in the native engine's trace: a program (shmats.c,
// static) attaches a 3-page segment, fills it, detaches it, attaches it
// again read-only (it holds those bytes from the start) and detaches it;
// recorded with the ptrace engine and natively (the same run:
// native_crosscheck_test.cc's inputs), the log materialized in one pass and
// in intervals. After each shmat and shmdt, the memory at the attachment
// (its mapping: name, permissions, size, or none; its 3 pages' bytes) is in
// each materialized trace what it is in the ptrace engine's (the ground
// truth: the segment named by /proc/PID/maps, the bytes written through the
// first attachment in the second), and each materialized trace is the
// ptrace engine's position by position (trace_compare_test_util.h). Each
// run starts in a new IPC namespace, so that shmget gives both the same id.
#include <gtest/gtest.h>
#include <sched.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <sstream>
#include <string>
#include <vector>

#include "backstep/core/byte_source.h"
#include "backstep/core/format_registry.h"
#include "backstep/core/hex.h"
#include "backstep/core/mappings.h"
#include "backstep/core/trace.h"
#include "recorder/crosscheck_test_util.h"
#include "recorder/native/mapping_names.h"
#include "recorder/native/native_crosscheck_util.h"
#include "recorder/native/native_test_util.h"
#include "recorder/replayed_state_test_util.h"
#include "recorder/trace_compare_test_util.h"

namespace backstep::record {
namespace {

constexpr std::uint64_t kPage = 4096;

// "0x78 x4096" when one byte fills the page at `start`, else its first bytes.
std::string DescribePage(const test_util::ReplayedState& state, std::uint64_t start) {
  const std::uint8_t first = state.ByteOrZero(start);
  std::uint64_t same = 1;
  while (same < kPage && state.ByteOrZero(start + same) == first) ++same;
  char text[64];
  std::snprintf(text, sizeof text, "0x%02x x%llu%s", first, static_cast<unsigned long long>(same),
                same == kPage ? "" : ", then other bytes");
  return text;
}

// The trace at `path` replayed: after each shmat and shmdt, the call, the
// attachment's address, the mapping there and its 3 pages (shmat only).
std::vector<std::string> AfterShmCalls(const std::string& path) {
  std::vector<std::string> out;
  auto trace = core::Trace::Open(path);
  auto source = core::MapFile(path);
  EXPECT_TRUE(trace.ok() && source.ok()) << path;
  if (!trace.ok() || !source.ok()) return out;
  auto reader = core::OpenTraceSource(*source);
  EXPECT_TRUE(reader.ok()) << reader.status().message();
  if (!reader.ok()) return out;
  test_util::ReplayedState state(**reader);
  core::Event e;
  std::uint64_t position = 0;
  while (true) {
    core::Expected<bool> more = (*reader)->Next(&e);
    if (!more.ok() || !*more) break;
    state.Apply(e);
    ++position;
    const bool attach = e.description.rfind("syscall 30(", 0) == 0;
    if (!attach && e.description.rfind("syscall 67(", 0) != 0) continue;
    const std::uint64_t at = state.U64(attach ? "rax" : "rdi");
    std::ostringstream line;
    line << (attach ? "shmat" : "shmdt") << " 0x" << std::hex << at << ":";
    auto maps = (*trace)->mappings().At(core::Position(position));
    if (!maps.ok()) {
      line << " error " << maps.status().message();
    } else {
      std::string mapping = " unmapped";
      for (const core::Mapping& m : *maps) {
        if (at >= m.start && at < m.end())
          mapping = " " + m.name + " " + m.permissions + " 0x" + core::HexU64(m.size).substr(2);
      }
      line << mapping;
    }
    if (attach) {
      for (std::uint64_t k = 0; k < 3; ++k)
        line << " [" << DescribePage(state, at + k * kPage) << "]";
    }
    out.push_back(line.str());
  }
  return out;
}

TEST(NativeShm, AttachedSegmentsAreMaterializedAsThePtraceEngineRecordsThem) {
  const test_util::CrossCheckCase program{"shmats_O2_static", {}};
  const std::string base = ::testing::TempDir() + "/native_shm";
  const std::string single = base + ".single.ucir", joined = base + ".joined.ucir";
  test_util::BothEngines run;
  // Each run in a new IPC namespace, so that shmget gives both the same id;
  // intervals, some starting with the segment attached.
  test_util::RecordWithBothEngines(program, base, /*snapshot_syscalls=*/1, &run, [] {
    ASSERT_EQ(unshare(CLONE_NEWIPC), 0) << "a new IPC namespace: " << std::strerror(errno);
  });
  if (HasFatalFailure()) return;
  ASSERT_EQ(run.ptrace.result.exit_code, 0);
  // Some interval starts with the segment attached (its restore replays the shmat).
  bool attached_at_a_snapshot = false;
  for (const SnapshotRef& r : run.log.snapshots) {
    for (const MappingNames::NamedRange& n : MappingNames::After(run.log, r.syscall).ranges())
      attached_at_a_snapshot |= n.path.rfind("/SYSV", 0) == 0;
  }
  EXPECT_TRUE(attached_at_a_snapshot);

  // The ground truth: the segment attached twice, holding the written bytes
  // the second time, and gone after each shmdt.
  const std::vector<std::string> truth = AfterShmCalls(run.ptrace.path);
  ASSERT_EQ(truth.size(), 4u);
  EXPECT_NE(truth[0].find("/SYSV"), std::string::npos) << truth[0];
  EXPECT_NE(truth[2].find("[0x78 x4096] [0x79 x4096] [0x7a x4096]"), std::string::npos) << truth[2];
  EXPECT_NE(truth[3].find("unmapped"), std::string::npos) << truth[3];

  test_util::MaterializeBothWaysAndCompare(run, single, joined,
                                           [&](const std::string& trace, const char* what) {
                                             EXPECT_EQ(AfterShmCalls(trace), truth) << what;
                                           });
  if (HasFailure()) return;
  test_util::RemoveRunFiles(run, {single, joined});
}

}  // namespace
}  // namespace backstep::record
