// The native engine's system call buffer (syscall_buffer.h), on
// tests/programs/buffered.c: the calls it buffers are logged exactly as the
// same calls traced one by one (a run with the buffer and a run without it,
// given the same inputs, give equal logs and byte-identical traces); a
// signal that arrives while the program makes only buffered calls is
// delivered at its next call, and a forked child that inherits the patched
// code runs on; snapshots never show the buffer (the intervals they start
// give the single pass byte for byte).
#include <fcntl.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "backstep/testing/tfile_fixtures.h"  // ReadFileBytes
#include "recorder/native/materialize.h"
#include "recorder/native/native_test_util.h"

namespace backstep::record {
namespace {

constexpr std::uint64_t kClockGettime = 228;

std::string Program(const std::string& name) {
  return std::string(BACKSTEP_RECORD_PROGRAMS) + "/" + name;
}

struct BufferedRun {
  std::string error;
  unsigned long buffered = 0, sites = 0;
};

// A native recording of `argv` (output to `out_path`, or /dev/null) in a
// new PID namespace, with how many calls the buffer took.
BufferedRun RecordCounting(const std::vector<std::string>& argv, const std::string& log_path,
                           NativeOptions options, const std::string& out_path = "/dev/null") {
  const std::string out = test_util::InNewPidNamespace([&]() -> std::string {
    options.spawn.argv = argv;
    options.spawn.stdout_fd = open(out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    options.spawn.stderr_fd = open("/dev/null", O_WRONLY);
    core::Expected<NativeResult> r = RecordNative(options, log_path);
    if (!r.ok()) return "native: " + r.status().message();
    return "buffered " + std::to_string(r->buffered) + " " + std::to_string(r->patched_sites);
  });
  BufferedRun run;
  if (std::sscanf(out.c_str(), "buffered %lu %lu", &run.buffered, &run.sites) != 2) run.error = out;
  return run;
}

// The inputs that differ from run to run, the same in both.
NativeOptions SameInputs() {
  NativeOptions options;
  options.at_random.assign(16, 0x5a);
  for (int i = 0; i < 8; ++i) options.getrandom.push_back(std::vector<std::uint8_t>(8, 0x11 * i));
  for (std::uint64_t t = 1; t <= 64; ++t) options.rdtsc.push_back(t * 1000003);
  return options;
}

// The log's intervals, materialized on two jobs, give its single pass byte
// for byte (then the log, its snapshots and both traces are removed).
void ExpectPartsEqualTheSinglePass(const NativeLog& log, const std::string& base) {
  MaterializeOptions parts, single;
  parts.jobs = 2;
  single.use_snapshots = false;
  core::Expected<RecordResult> p = test_util::MaterializeTo(log, base + ".parts.ucir", parts);
  ASSERT_TRUE(p.ok()) << p.status().message();
  core::Expected<RecordResult> s = test_util::MaterializeTo(log, base + ".single.ucir", single);
  ASSERT_TRUE(s.ok()) << s.status().message();
  EXPECT_EQ(p->instructions, s->instructions);
  EXPECT_TRUE(core::testing::ReadFileBytes(base + ".parts.ucir") ==
              core::testing::ReadFileBytes(base + ".single.ucir"));
  std::remove((base + ".nlog").c_str());
  for (const SnapshotRef& r : log.snapshots) std::remove((log.directory + "/" + r.file).c_str());
  std::remove((base + ".parts.ucir").c_str());
  std::remove((base + ".single.ucir").c_str());
}

class NativeBuffer : public ::testing::TestWithParam<std::string> {};

TEST_P(NativeBuffer, BufferedCallsAreLoggedAsTracedOnes) {
  BACKSTEP_SKIP_PIE_WITHOUT_RDTSC_FAULTING(GetParam());
  const std::string base = ::testing::TempDir() + "/buffer-" + GetParam();
  const std::string buffered_log = base + ".on.nlog", traced_log = base + ".off.nlog";
  const BufferedRun on = RecordCounting({Program(GetParam())}, buffered_log, SameInputs());
  ASSERT_EQ(on.error, "");
  // 300 rounds of read, two writes, getpid, getppid, getuid, clock_gettime.
  EXPECT_GE(on.buffered, 2000u);
  EXPECT_GE(on.sites, 6u);
  core::Expected<NativeLog> a = ReadNativeLog(buffered_log);
  ASSERT_TRUE(a.ok()) << a.status().message();
  // The second run traces every call and gets the first's clock readings.
  NativeOptions options = SameInputs();
  options.syscall_buffer = false;
  for (const LoggedSyscall& call : a->syscalls) {
    // A failed one (no such clock) is the kernel's in both: not given.
    if (call.entry.orig_rax != kClockGettime || call.exit.rax > ~std::uint64_t{4095}) continue;
    KernelAnswer& answer = options.kernel_answers.emplace_back();
    answer.nr = kClockGettime;
    answer.result = call.exit.rax;
    for (const LoggedWrite& w : call.writes)
      answer.bytes.insert(answer.bytes.end(), w.bytes.begin(), w.bytes.end());
  }
  const BufferedRun off = RecordCounting({Program(GetParam())}, traced_log, options);
  ASSERT_EQ(off.error, "");
  EXPECT_EQ(off.buffered, 0u);
  core::Expected<NativeLog> b = ReadNativeLog(traced_log);
  ASSERT_TRUE(b.ok()) << b.status().message();
  ASSERT_EQ(a->syscalls.size(), b->syscalls.size());
  for (std::size_t i = 0; i < a->syscalls.size(); ++i) {
    const LoggedSyscall &x = a->syscalls[i], &y = b->syscalls[i];
    SCOPED_TRACE("system call #" + std::to_string(i) + " (" + std::to_string(y.entry.orig_rax) +
                 ")");
    EXPECT_EQ(std::memcmp(&x.entry, &y.entry, sizeof x.entry), 0);
    EXPECT_EQ(x.exit.rax, y.exit.rax);
    EXPECT_EQ(x.exit.rip, y.exit.rip);
    EXPECT_EQ(x.exit.rcx, y.exit.rcx);
    EXPECT_EQ(x.signal_after, y.signal_after);
    ASSERT_EQ(x.writes.size(), y.writes.size());
    for (std::size_t k = 0; k < x.writes.size(); ++k) {
      EXPECT_EQ(x.writes[k].address, y.writes[k].address);
      EXPECT_EQ(x.writes[k].bytes, y.writes[k].bytes);
    }
    if (HasFailure()) return;
  }
  // So their traces are the same, byte for byte.
  MaterializeOptions single;
  single.use_snapshots = false;
  for (const auto& [log, trace] : {std::pair{&*a, base + ".on.ucir"}, {&*b, base + ".off.ucir"}}) {
    core::Expected<RecordResult> m = test_util::MaterializeTo(*log, trace, single);
    ASSERT_TRUE(m.ok()) << m.status().message();
    EXPECT_EQ(m->exit_code, 0);
  }
  EXPECT_TRUE(core::testing::ReadFileBytes(base + ".on.ucir") ==
              core::testing::ReadFileBytes(base + ".off.ucir"));
  for (const std::string& p : {buffered_log, traced_log, base + ".on.ucir", base + ".off.ucir"})
    std::remove(p.c_str());
}

// Snapshots are taken at traced calls, some of them passed on by a patched
// site's slot: the intervals they start, materialized apart, give the single
// pass byte for byte (the snapshots show the original code, no buffer, the
// site's rip).
TEST_P(NativeBuffer, SnapshotsShowTheProgramWithoutTheBuffer) {
  BACKSTEP_SKIP_PIE_WITHOUT_RDTSC_FAULTING(GetParam());
  const std::string base = ::testing::TempDir() + "/buffer-snap-" + GetParam();
  NativeOptions options = SameInputs();
  options.snapshot_syscalls = 100;
  const BufferedRun run = RecordCounting({Program(GetParam())}, base + ".nlog", options);
  ASSERT_EQ(run.error, "");
  EXPECT_GE(run.buffered, 2000u);
  core::Expected<NativeLog> log = ReadNativeLog(base + ".nlog");
  ASSERT_TRUE(log.ok()) << log.status().message();
  EXPECT_GE(log->snapshots.size(), 4u);
  ExpectPartsEqualTheSinglePass(*log, base);
}

// A program whose calls are all buffered never stops by itself: snapshots
// by its CPU time come from the recorder's clock, which makes its next call
// stop (SnapshotClock). Their intervals give the single pass too.
TEST(NativeBufferClock, SnapshotsComeWhenEveryCallIsBuffered) {
  const std::string base = ::testing::TempDir() + "/buffer-clock";
  // Here, not in a new PID namespace, where no thread can be made.
  NativeOptions options;
  options.snapshot_ms = 1;
  options.spawn.argv = {Program("buffered_O2_static"), "compute"};
  options.spawn.stdout_fd = open("/dev/null", O_WRONLY);
  core::Expected<NativeResult> run = RecordNative(options, base + ".nlog");
  close(options.spawn.stdout_fd);
  ASSERT_TRUE(run.ok()) << run.status().message();
  EXPECT_GE(run->buffered, 2000u);  // of the 4000 pwrites: those the clock made stop are not
  core::Expected<NativeLog> log = ReadNativeLog(base + ".nlog");
  ASSERT_TRUE(log.ok()) << log.status().message();
  // Without the clock: 2 (at the calls that stop by themselves).
  EXPECT_GE(log->snapshots.size(), 4u) << run->buffered << " buffered";
  ExpectPartsEqualTheSinglePass(*log, base);
}

INSTANTIATE_TEST_SUITE_P(Programs, NativeBuffer,
                         ::testing::Values("buffered_O2_static", "buffered_O2_pie"));

// A SIGUSR1 a child sends while the program loops on buffered writes is held
// and delivered at its next call (made traced for it), where the log holds
// it; the child, which runs the inherited buffer with nobody draining it,
// ends; the materialization delivers the signal as the run did.
TEST(NativeBufferSignals, HeldSignalIsDeliveredAtTheNextCall) {
  const std::string base = ::testing::TempDir() + "/buffer-signal";
  const BufferedRun run = RecordCounting({Program("buffered_O2_static"), "signal"}, base + ".nlog",
                                         NativeOptions{}, base + ".out");
  ASSERT_EQ(run.error, "");
  EXPECT_GE(run.buffered, 2000u);
  const std::vector<std::uint8_t> out = core::testing::ReadFileBytes(base + ".out");
  EXPECT_EQ(std::string(out.begin(), std::find(out.begin(), out.end(), '\n')), "got 10");
  core::Expected<NativeLog> log = ReadNativeLog(base + ".nlog");
  ASSERT_TRUE(log.ok()) << log.status().message();
  std::vector<std::uint64_t> delivered_at;
  for (const LoggedSyscall& call : log->syscalls)
    if (call.signal_after == SIGUSR1) delivered_at.push_back(call.entry.orig_rax);
  EXPECT_EQ(delivered_at, std::vector<std::uint64_t>{1});  // a write
  core::Expected<RecordResult> m = test_util::MaterializeTo(*log, base + ".ucir");
  ASSERT_TRUE(m.ok()) << m.status().message();
  EXPECT_EQ(m->exit_code, 0);
  EXPECT_EQ(m->signals, 1u);
  for (const std::string& p : {base + ".nlog", base + ".out", base + ".ucir"})
    std::remove(p.c_str());
}

}  // namespace
}  // namespace backstep::record
