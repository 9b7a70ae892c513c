// The native engine end to end: programs recorded natively
// (native_recorder.h) and materialized (materialize.h) give, position by
// position, the trace the emu engine records of the same run (the same
// inputs: AT_RANDOM, getrandom and rdtsc from the log, the same CPUID, pid
// 1 of a new PID namespace in both runs); a log edited by the test is
// caught at the system call it no longer matches; a damaged log is refused
// with its offset.
#include "recorder/native/native_recorder.h"

#include <cpuid.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sched.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <string>

#include "backstep/core/hex.h"
#include "recorder/cpuid.h"
#include "recorder/emu/emu_recorder.h"
#include "recorder/native/materialize.h"
#include "recorder/native/native_test_util.h"
#include "recorder/trace_compare_test_util.h"
#include "recorder/usercorn_sink.h"

namespace backstep::record {
namespace {

std::string Program(const std::string& name) {
  return std::string(BACKSTEP_RECORD_PROGRAMS) + "/" + name;
}

std::string RecordLog(const std::string& program, const std::string& log_path,
                      std::uint64_t snapshot_syscalls = 0) {
  NativeOptions options;
  options.snapshot_syscalls = snapshot_syscalls;
  return test_util::RecordNativeLog({Program(program)}, log_path, options);
}

// The emu engine's recording of the run the log describes.
std::string RecordEmuLike(const NativeLog& log, const std::string& trace) {
  return test_util::InNewPidNamespace([&]() -> std::string {
    const ProgramEnvironment environment(log.cpuid);  // as the recording's
    EmuOptions inputs;
    inputs.at_random.assign(log.at_random.begin(), log.at_random.end());
    inputs.rdtsc = log.rdtsc;
    for (const LoggedSyscall& s : log.syscalls) {
      if (s.entry.orig_rax != 318) continue;  // getrandom
      std::vector<std::uint8_t>& bytes = inputs.getrandom.emplace_back();
      for (const LoggedWrite& w : s.writes)
        bytes.insert(bytes.end(), w.bytes.begin(), w.bytes.end());
    }
    if (log.cpuid == NativeLog::Cpuid::kHost) {
      // The CPU the recording ran on answers (this worker is pinned to it),
      // with the ids materialization gives (cpuid.h).
      cpu_set_t one;
      CPU_ZERO(&one);
      CPU_SET(log.cpu, &one);
      if (sched_setaffinity(0, sizeof one, &one) != 0) return "cannot pin to the log's CPU";
      inputs.cpuid = [](std::uint32_t leaf, std::uint32_t subleaf) {
        CpuidResult r;
        __cpuid_count(leaf, subleaf, r.eax, r.ebx, r.ecx, r.edx);
        return WithFirstCpuIds(leaf, r);
      };
    }
    auto sink = UsercornSink::Create(trace, false);
    if (!sink.ok()) return sink.status().message();
    RecordOptions options;
    options.spawn.argv = log.argv;
    options.spawn.stdout_fd = open("/dev/null", O_WRONLY);
    options.hide_vdso = options.portable_cpuid = true;
    options.reads = false;
    options.check_interval = 0;
    core::Expected<RecordResult> r = RecordEmulated(options, **sink, inputs);
    return r.ok() ? "" : "emu: " + r.status().message();
  });
}

using test_util::MaterializeTo;

// Each test reads the CPU ids anew as it starts (cpuid.h, PrimeHostCpuIds):
// the recordings and materializations it compares, made within seconds of
// each other, then answer cpuid with the ids the program saw, even on a VM
// whose ids change from minute to minute. (Every test binary of this
// directory links this file.)
class PrimeCpuIdsPerTest : public ::testing::EmptyTestEventListener {
  void OnTestStart(const ::testing::TestInfo&) override { PrimeHostCpuIds(); }
};
const bool kPrimeCpuIdsPerTest = [] {
  ::testing::UnitTest::GetInstance()->listeners().Append(new PrimeCpuIdsPerTest);
  return true;
}();

class NativeCrossCheck : public ::testing::TestWithParam<std::string> {};

TEST_P(NativeCrossCheck, MaterializedTraceEqualsEmuTrace) {
  BACKSTEP_SKIP_PIE_WITHOUT_RDTSC_FAULTING(GetParam());
  const std::string base = ::testing::TempDir() + "/" + GetParam();
  const std::string log_path = base + ".nlog", materialized = base + ".materialized.ucir",
                    emulated = base + ".emu.ucir";
  ASSERT_EQ(RecordLog(GetParam(), log_path), "");
  core::Expected<NativeLog> log = ReadNativeLog(log_path);
  ASSERT_TRUE(log.ok()) << log.status().message();
  EXPECT_EQ(log->end, NativeLog::End::kExited);
  core::Expected<RecordResult> m = MaterializeTo(*log, materialized);
  ASSERT_TRUE(m.ok()) << m.status().message();
  EXPECT_EQ(m->exit_code, log->status);
  EXPECT_EQ(m->syscalls, log->syscalls.size());
  ASSERT_EQ(RecordEmuLike(*log, emulated), "");
  test_util::CompareTraces(emulated, materialized, "emu", "materialized");
  if (HasFatalFailure()) return;
  for (const std::string& p : {log_path, materialized, emulated}) std::remove(p.c_str());
}

std::uint64_t EventCount(const std::string& path) {
  auto source = core::MapFile(path);
  if (!source.ok()) return 0;
  auto reader = core::OpenTraceSource(*source);
  if (!reader.ok()) return 0;
  core::Event event;
  std::uint64_t n = 0;
  for (core::Expected<bool> more = (*reader)->Next(&event); more.ok() && *more;
       more = (*reader)->Next(&event))
    ++n;
  return n;
}

// Snapshots every few system calls: the intervals, materialized two at a
// time from their snapshots and joined, give the single pass's trace
// position by position.
TEST(NativeIntervals, JoinedIntervalsEqualTheSinglePass) {
  const std::string base = ::testing::TempDir() + "/intervals";
  const std::string log_path = base + ".nlog", single = base + ".single.ucir",
                    joined = base + ".joined.ucir";
  ASSERT_EQ(RecordLog("scenario_O2_static", log_path, /*snapshot_syscalls=*/3), "");
  core::Expected<NativeLog> log = ReadNativeLog(log_path);
  ASSERT_TRUE(log.ok()) << log.status().message();
  ASSERT_GE(log->snapshots.size(), 2u);
  MaterializeOptions one_pass;
  one_pass.use_snapshots = false;
  core::Expected<RecordResult> s = MaterializeTo(*log, single, one_pass);
  ASSERT_TRUE(s.ok()) << s.status().message();
  MaterializeOptions parallel;
  parallel.jobs = 2;
  // The last interval first, alone: a trace of the run's end.
  parallel.tail_path = base + ".last.ucir";
  bool tail_ready = false;
  parallel.on_tail = [&] { tail_ready = true; };
  core::Expected<RecordResult> j = MaterializeTo(*log, joined, parallel);
  ASSERT_TRUE(j.ok()) << j.status().message();
  EXPECT_TRUE(tail_ready);
  EXPECT_EQ(j->instructions, s->instructions);
  EXPECT_EQ(j->syscalls, s->syscalls);
  EXPECT_EQ(j->exit_code, log->status);
  test_util::CompareTraces(single, joined, "single pass", "joined");
  if (HasFatalFailure()) return;
  // The tail is the joined trace's end, from its keyframe (the last
  // snapshot: every register and all memory) on.
  const std::uint64_t tail_events = EventCount(parallel.tail_path);
  ASSERT_GT(tail_events, 0u);
  ASSERT_LT(tail_events, EventCount(joined));
  test_util::CompareTraces(joined, parallel.tail_path, "joined", "tail",
                           EventCount(joined) - tail_events);
  if (HasFatalFailure()) return;
  // A planted divergence in interval 2 is caught at its system call and
  // named at the position a single pass names.
  NativeLog edited = *log;
  const std::size_t call = edited.snapshots[1].syscall + 1;
  ASSERT_LT(call, edited.syscalls.size());
  edited.syscalls[call].entry.r12 ^= 0x10;
  core::Expected<RecordResult> one = MaterializeTo(edited, single, one_pass);
  ASSERT_FALSE(one.ok());
  const std::string& message = one.status().message();
  const std::size_t at = message.find("at position ");
  ASSERT_NE(at, std::string::npos) << message;
  const std::string position = message.substr(at + 12, message.find(' ', at + 12) - at - 12);
  core::Expected<RecordResult> two = MaterializeTo(edited, joined, parallel);
  ASSERT_FALSE(two.ok());
  EXPECT_NE(two.status().message().find("of interval 2 "), std::string::npos)
      << two.status().message();
  EXPECT_NE(two.status().message().find("r12 is"), std::string::npos) << two.status().message();
  EXPECT_NE(two.status().message().find(": position " + position + " there]"), std::string::npos)
      << two.status().message() << " (the single pass: " << message << ")";
  for (const std::string& p : {log_path, single, joined, parallel.tail_path})
    std::remove(p.c_str());
  for (const SnapshotRef& r : log->snapshots) std::remove((log->directory + "/" + r.file).c_str());
}

std::string FileBytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// A snapshot after every system call (--snapshot-syscalls 1): the workers'
// parts, joined by concatenation, are the single pass's file byte for byte
// (each part starts with the one writer's state at its boundary), one
// interval at a time or two, with the tail written beside or not; the cuts
// the single pass makes there change no event (position by position equal
// to a pass without any); no part file is left. strings_O2_static's
// snapshots hold x87 state (its last x87 instruction's pointers), which a
// worker must load whole into the emulator. crash_O2_static computes after
// its last system call, then dies of SIGSEGV: a snapshot follows that last
// call, and the interval before it must still stop there.
class NativeParts : public ::testing::TestWithParam<const char*> {};

TEST_P(NativeParts, JoinedPartsAreTheSinglePassByteForByte) {
  const std::string base = ::testing::TempDir() + "/parts_" + GetParam();
  const std::string log_path = base + ".nlog", single = base + ".single.ucir",
                    uncut = base + ".uncut.ucir", joined = base + ".joined.ucir",
                    parts = base + ".dir";
  ASSERT_EQ(RecordLog(GetParam(), log_path, /*snapshot_syscalls=*/1), "");
  core::Expected<NativeLog> log = ReadNativeLog(log_path);
  ASSERT_TRUE(log.ok()) << log.status().message();
  ASSERT_GE(log->snapshots.size(), 5u);
  MaterializeOptions one_pass;
  one_pass.use_snapshots = false;
  core::Expected<RecordResult> s = MaterializeTo(*log, single, one_pass);
  ASSERT_TRUE(s.ok()) << s.status().message();
  NativeLog no_snapshots = *log;
  no_snapshots.snapshots.clear();
  ASSERT_TRUE(MaterializeTo(no_snapshots, uncut, one_pass).ok());
  test_util::CompareTraces(uncut, single, "uncut", "single pass");
  if (HasFatalFailure()) return;
  const std::string expected = FileBytes(single);
  ASSERT_GT(expected.size(), 84u);
  std::filesystem::remove_all(parts);  // a failed run's
  ASSERT_EQ(mkdir(parts.c_str(), 0700), 0);
  for (unsigned jobs : {1u, 2u}) {
    SCOPED_TRACE("jobs " + std::to_string(jobs));
    MaterializeOptions parallel;
    parallel.jobs = jobs;
    parallel.part_directory = parts;
    if (jobs == 2) parallel.tail_path = base + ".last.ucir";
    core::Expected<RecordResult> j = MaterializeTo(*log, joined, parallel);
    ASSERT_TRUE(j.ok()) << j.status().message();
    EXPECT_EQ(j->instructions, s->instructions);
    const std::string got = FileBytes(joined);
    ASSERT_EQ(got.size(), expected.size());
    const auto diff = std::mismatch(got.begin(), got.end(), expected.begin());
    EXPECT_TRUE(diff.first == got.end())
        << "first different byte at offset " << (diff.first - got.begin());
  }
  EXPECT_GT(EventCount(base + ".last.ucir"), 0u);
  EXPECT_EQ(rmdir(parts.c_str()), 0) << "part files left behind";
  for (const std::string& p : {log_path, single, uncut, joined, base + ".last.ucir"})
    std::remove(p.c_str());
  for (const SnapshotRef& r : log->snapshots) std::remove((log->directory + "/" + r.file).c_str());
}

INSTANTIATE_TEST_SUITE_P(Programs, NativeParts,
                         ::testing::Values("scenario_O2_static", "strings_O2_static",
                                           "crash_O2_static"),
                         [](const auto& p) { return p.param; });

// The engine cross-check's programs (emu/emu_crosscheck_test.cc), static
// -O2 builds, one dynamic PIE build (ld.so, lazy binding, glibc's string
// functions), and faults.c (SIGSEGV and SIGFPE from instructions, with
// handlers: delivered natively at once, raised again by the emulator).
INSTANTIATE_TEST_SUITE_P(Programs, NativeCrossCheck,
                         ::testing::Values("loop_O2_static", "strings_O2_static",
                                           "syscalls_O2_static", "scenario_O2_static",
                                           "dataflow_O2_static", "tracepoints_O2_static",
                                           "strings_O0_pie", "faults_O2_static"),
                         [](const auto& p) { return p.param; });

// Where rdtsc does not fault, a dynamically linked program's recording
// cannot be materialized (ld.so reads the counter unseen): the error names
// the divergence and the reason, and what to use instead.
TEST(NativeRdtsc, WithoutRdtscFaultingMaterializationSaysWhy) {
  if (RdtscFaults()) GTEST_SKIP() << "rdtsc faults on this machine: the native engine logs it";
  const std::string base = ::testing::TempDir() + "/unfaulted-rdtsc";
  ASSERT_EQ(RecordLog("strings_O0_pie", base + ".nlog"), "");
  core::Expected<NativeLog> log = ReadNativeLog(base + ".nlog");
  ASSERT_TRUE(log.ok()) << log.status().message();
  const core::Expected<RecordResult> m = MaterializeTo(*log, base + ".ucir");
  ASSERT_FALSE(m.ok());
  const core::Status& s = m.status();
  EXPECT_NE(s.message().find("materialization diverged from the recording"), std::string::npos)
      << s.message();
  EXPECT_NE(s.message().find("does not make rdtsc fault"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("--engine ptrace"), std::string::npos) << s.message();
  std::remove((base + ".nlog").c_str());
  std::remove((base + ".ucir").c_str());
}

TEST(NativeDivergence, EditedLogIsCaughtAtTheSystemCall) {
  const std::string log_path = ::testing::TempDir() + "/planted.nlog";
  ASSERT_EQ(RecordLog("loop_O2_static", log_path), "");
  core::Expected<NativeLog> log = ReadNativeLog(log_path);
  ASSERT_TRUE(log.ok()) << log.status().message();
  // The position of each system call in the faithful materialization.
  const std::string trace = ::testing::TempDir() + "/planted.ucir";
  ASSERT_TRUE(MaterializeTo(*log, trace).ok());
  // A system call in the middle (rseq is answered by the emu engine itself).
  std::size_t k = log->syscalls.size() / 2;
  while (k < log->syscalls.size() && log->syscalls[k].entry.orig_rax == 334) ++k;
  ASSERT_LT(k, log->syscalls.size());
  std::uint64_t position = 0, seen = 0;
  {
    auto source = core::MapFile(trace);
    ASSERT_TRUE(source.ok());
    auto reader = core::OpenTraceSource(*source);
    ASSERT_TRUE(reader.ok());
    core::Event e;
    for (std::uint64_t i = 0;; ++i) {
      core::Expected<bool> more = (*reader)->Next(&e);
      ASSERT_TRUE(more.ok() && *more) << "fewer system calls than logged";
      if (e.description.rfind("syscall ", 0) != 0) continue;
      if (seen++ == k) {
        position = i;
        break;
      }
    }
  }
  // The log now says its third argument was one more.
  log->syscalls[k].entry.rdx += 1;
  ASSERT_TRUE(WriteNativeLog(*log, log_path).ok());
  core::Expected<NativeLog> edited = ReadNativeLog(log_path);
  ASSERT_TRUE(edited.ok());
  core::Expected<RecordResult> m = MaterializeTo(*edited, trace);
  ASSERT_FALSE(m.ok());
  const std::string& why = m.status().message();
  EXPECT_NE(why.find("diverged"), std::string::npos) << why;
  EXPECT_NE(why.find("position " + std::to_string(position) + " "), std::string::npos) << why;
  EXPECT_NE(why.find("system call #" + std::to_string(k)), std::string::npos) << why;
  EXPECT_NE(why.find("`syscall` at " + core::HexU64(log->syscalls[k].entry.rip - 2)),
            std::string::npos)
      << why;
  EXPECT_NE(
      why.find("rdx is " + core::HexU64(log->syscalls[k].entry.rdx - 1) + " in the emulation, " +
               core::HexU64(log->syscalls[k].entry.rdx) + " in the log"),
      std::string::npos)
      << why;
  std::remove(log_path.c_str());
  std::remove(trace.c_str());
}

TEST(NativeRecord, ThreadsAndExecAreRefused) {
  const std::string log_path = ::testing::TempDir() + "/refused.nlog";
  const std::string threads = RecordLog("threads_O2_static", log_path);
  EXPECT_NE(threads.find("the program creates a thread (clone with CLONE_THREAD"),
            std::string::npos)
      << threads;
  // env execs its command in the process recorded.
  const std::string exec = test_util::RecordNativeLog({"/usr/bin/env", "true"}, log_path);
  EXPECT_NE(exec.find("the program calls execve"), std::string::npos) << exec;
}

// Records `program` natively into `log_path`, its standard output into
// `out_path`.
core::Expected<NativeResult> RecordPrintingTo(const std::string& program,
                                              const std::string& log_path,
                                              const std::string& out_path) {
  NativeOptions options;
  options.spawn.argv = {program};
  options.spawn.stdout_fd = open(out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (options.spawn.stdout_fd < 0) return core::Status::IOError("cannot create " + out_path);
  core::Expected<NativeResult> r = RecordNative(options, log_path);
  close(options.spawn.stdout_fd);
  return r;
}

// fork and vfork: the parent is recorded, the children run (the fork child
// writes its own copy of `marker`), the program's output is its native one,
// and the materialization answers the forks from the log and ends as the
// program did.
TEST(NativeRecord, ForksRecordTheParent) {
  const std::string log_path = ::testing::TempDir() + "/forks.nlog";
  const std::string out_path = ::testing::TempDir() + "/forks.out";
  core::Expected<NativeResult> r = RecordPrintingTo(Program("forks_O2_static"), log_path, out_path);
  ASSERT_TRUE(r.ok()) << r.status().message();
  std::ifstream in(out_path);
  std::string line;
  std::getline(in, line);
  EXPECT_EQ(line, "fork 3 vfork 4 marker 0");
  core::Expected<NativeLog> log = ReadNativeLog(log_path);
  ASSERT_TRUE(log.ok()) << log.status().message();
  const std::string trace = ::testing::TempDir() + "/forks.ucir";
  core::Expected<RecordResult> m = MaterializeTo(*log, trace);
  ASSERT_TRUE(m.ok()) << m.status().message();
  EXPECT_EQ(m->exit_code, 0);
  EXPECT_EQ(m->syscalls, log->syscalls.size());
  for (const std::string& p : {log_path, out_path, trace}) std::remove(p.c_str());
}

// A fork child's cpuid (it inherits CPUID faulting when the machine has it)
// is answered with the CPU's values by the recorder, whose own thread has
// CPUID faulting while it records (cpuid.h: CpuidFaultingForThisThread): a
// raw cpuid there would kill the recorder with SIGSEGV.
TEST(NativeRecord, ForkChildsCpuidIsAnswered) {
  const std::string log_path = ::testing::TempDir() + "/fork_cpuid.nlog";
  const std::string out_path = ::testing::TempDir() + "/fork_cpuid.out";
  core::Expected<NativeResult> r =
      RecordPrintingTo(Program("fork_cpuid_O2_static"), log_path, out_path);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->end, NativeLog::End::kExited);
  std::ifstream in(out_path);
  std::string line;
  std::getline(in, line);
  EXPECT_NE(line.find(" child 7"), std::string::npos) << line;
  if (r->cpuid == NativeLog::Cpuid::kPortable) {
    EXPECT_EQ(line, "max leaf " + std::to_string(PortableCpuid(0, 0).eax) + " child 7");
  }
  for (const std::string& p : {log_path, out_path}) std::remove(p.c_str());
}

// --snapshot-ms measures the program's CPU time, not the record phase's
// clock: a program that waits (sleep 0.1: one nanosleep, ~1 ms of CPU) is
// not snapshotted after its wait, which a wall clock would do at the next
// call; an interval then holds about as many instructions however slow
// the record phase runs.
TEST(NativeRecord, SnapshotsGoByTheProgramsCpuTime) {
  if (access("/bin/sleep", X_OK) != 0) GTEST_SKIP() << "no /bin/sleep";
  const std::string log_path = ::testing::TempDir() + "/sleep.nlog";
  NativeOptions options;
  options.snapshot_ms = 20;
  ASSERT_EQ(test_util::RecordNativeLog({"/bin/sleep", "0.1"}, log_path, options), "");
  core::Expected<NativeLog> log = ReadNativeLog(log_path);
  ASSERT_TRUE(log.ok()) << log.status().message();
  EXPECT_EQ(log->end, NativeLog::End::kExited);
  EXPECT_EQ(log->snapshots.size(), 0u);
  for (const SnapshotRef& snap : log->snapshots)
    std::remove((log_path.substr(0, log_path.rfind('/') + 1) + snap.file).c_str());
  std::remove(log_path.c_str());
}

// Signals the program raises or that interrupt a system call are delivered
// as that call returns, as without the recorder (the program's output is
// its native one); materialization delivers both where they were (SIGUSR1
// as tgkill returns, SIGALRM as the pause() it interrupted returns).
TEST(NativeRecord, SignalsAreDeliveredAtTheSystemCallsReturn) {
  const std::string log_path = ::testing::TempDir() + "/signals.nlog";
  const std::string out_path = ::testing::TempDir() + "/signals.out";
  core::Expected<NativeResult> r =
      RecordPrintingTo(Program("signals_O2_static"), log_path, out_path);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->end, NativeLog::End::kExited);
  std::ifstream in(out_path);
  std::string line;
  std::getline(in, line);
  EXPECT_EQ(line, "usr1 10 alrm 14 handled 107");
  core::Expected<NativeLog> log = ReadNativeLog(log_path);
  ASSERT_TRUE(log.ok()) << log.status().message();
  std::vector<int> delivered;
  std::size_t first = log->syscalls.size();
  for (std::size_t k = 0; k < log->syscalls.size(); ++k) {
    if (!log->syscalls[k].signal_after) continue;
    delivered.push_back(log->syscalls[k].signal_after);
    first = std::min(first, k);
  }
  EXPECT_EQ(delivered, (std::vector<int>{SIGUSR1, SIGALRM}));
  ASSERT_LT(first, log->syscalls.size());
  EXPECT_EQ(log->syscalls[first].entry.orig_rax, 234u);  // tgkill: raise()
  EXPECT_EQ(log->syscalls[first].siginfo.size(), 128u);
  // SIGALRM interrupted pause(): logged with -ERESTARTNOHAND, which the
  // delivery turns into -EINTR in the handler's frame.
  std::size_t second = first + 1;
  while (second < log->syscalls.size() && !log->syscalls[second].signal_after) ++second;
  ASSERT_LT(second, log->syscalls.size());
  EXPECT_EQ(log->syscalls[second].entry.orig_rax, 34u);  // pause
  EXPECT_EQ(static_cast<std::int64_t>(log->syscalls[second].exit.rax), -514);
  // Both are materialized (natively and in the emulator, the program
  // ends as it did).
  const std::string trace = ::testing::TempDir() + "/signals.ucir";
  core::Expected<RecordResult> m = MaterializeTo(*log, trace);
  ASSERT_TRUE(m.ok()) << m.status().message();
  EXPECT_EQ(m->exit_code, 0);
  EXPECT_EQ(m->signals, 2u);
  for (const std::string& p : {log_path, out_path, trace}) std::remove(p.c_str());
}

TEST(NativeLog, DamagedLogIsRefusedWithItsOffset) {
  const std::string path = ::testing::TempDir() + "/damaged.nlog";
  NativeLog log;
  log.argv = {"/bin/true"};
  log.syscalls.resize(2);
  ASSERT_TRUE(WriteNativeLog(log, path).ok());
  std::string bytes;
  {
    std::ifstream in(path, std::ios::binary);
    bytes.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  ASSERT_TRUE(ReadNativeLog(path).ok());
  {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size() - 20));
  }
  core::Expected<NativeLog> r = ReadNativeLog(path);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("truncated at offset"), std::string::npos)
      << r.status().message();
  std::remove(path.c_str());
}

}  // namespace
}  // namespace backstep::record
