// Engine cross-check: records every test program (tests/programs/*.c,
// -O0/-O2 x static/PIE) with the ptrace engine (the ground truth) and the
// emulation engine, both with --cpuid portable and --no-vdso, and replays both UCIR
// traces side by side through the usercorn reader: at every position the
// same event kind, the same registers written, every GPR, rip, eflags, the
// selectors and fs/gs base equal, and the bytes each instruction wrote (in
// either trace) equal in both; x87 control/status/tag, mxcsr and xmm0-15 every 16 positions and
// at every system call; all memory either trace knows every 50000
// positions and at the end; the same number of instructions.
//
// Nondeterministic inputs: AT_RANDOM's bytes (stack canary, pointer guard)
// getrandom's (malloc's tcache key), rdtsc's (ld.so's start time) and those
// of the system calls whose answer varies (the clock reads, since the vDSO
// is hidden, and sysinfo: real programs call them), the bytes read from
// /dev/urandom or /dev/random (perl's hash seed), the inode numbers and
// times stat-family calls return (files a run creates or writes), where an
// ignored signal arrived (SIGCHLD when an untraced child exits): the
// emulated run gets the ptrace run's (EmuOptions); process
// and thread ids: both programs run as pid 1 of a new PID namespace. The ptrace engine's rdtsc is
// the host's, the emulator's a counter: the programs do not execute it.
//
// Real programs: BACKSTEP_CROSSCHECK_COMMANDS="wc small.txt;gzip -c small.txt"
// adds one case per command (run in the current directory, words split on
// spaces, the program found on PATH), named RealPrograms/EngineCrossCheck.
// EmuTraceEqualsPtraceTrace/N; not set (CI): none. The rates make them
// minutes each (docs/usage-record.md, "Emulation engine").
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sched.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "backstep/core/byte_source.h"
#include "backstep/core/event_notes.h"
#include "backstep/core/format_registry.h"
#include "backstep/core/number.h"
#include "recorder/emu/emu_recorder.h"
#include "recorder/recorder.h"
#include "recorder/replayed_state_test_util.h"
#include "recorder/trace_compare_test_util.h"
#include "recorder/usercorn_sink.h"

namespace backstep::record {
namespace {

using Replay = test_util::ReplayedState;

// A program to record: a test program's name, or a command line.
struct CrossCheckCase {
  std::string name;               // the test's name and the traces' file names
  std::vector<std::string> argv;  // empty: the test program `name`
};

void PrintTo(const CrossCheckCase& c, std::ostream* os) { *os << c.name; }

std::vector<std::string> ArgvOf(const CrossCheckCase& c) {
  if (!c.argv.empty()) return c.argv;
  return {std::string(BACKSTEP_RECORD_PROGRAMS) + "/" + c.name};
}

struct Recording {
  std::string path;
  RecordResult result;
};

// Calls fn(event) for each event of `trace`, in order; nothing if it does
// not open.
template <typename Fn>
void ForEachEvent(const std::string& trace, Fn fn) {
  auto source = core::MapFile(trace);
  if (!source.ok()) return;
  auto reader = core::OpenTraceSource(*source);
  if (!reader.ok()) return;
  core::Event e;
  while (true) {
    core::Expected<bool> more = (*reader)->Next(&e);
    if (!more.ok() || !*more) break;
    fn(e);
  }
}

// The bytes each getrandom call of a trace returned.
std::vector<std::vector<std::uint8_t>> GetrandomResults(const std::string& trace) {
  std::vector<std::vector<std::uint8_t>> out;
  ForEachEvent(trace, [&](const core::Event& e) {
    if (e.description.rfind("syscall 318(", 0) != 0) return;
    std::vector<std::uint8_t>& bytes = out.emplace_back();
    for (const core::MemoryAccess& w : e.writes)
      bytes.insert(bytes.end(), w.data.begin(), w.data.end());
  });
  return out;
}

// What each system call whose answer varies from run to run (the clock
// reads, sysinfo) returned in a trace: its result (rax after it) and the
// bytes it wrote.
std::vector<EmuOptions::KernelAnswer> KernelAnswers(const std::string& trace) {
  std::vector<EmuOptions::KernelAnswer> out;
  const core::RegisterId rax = *core::X86_64().Find("rax");
  ForEachEvent(trace, [&](const core::Event& e) {
    for (std::uint64_t nr : {228, 96, 201, 99}) {
      if (e.description.rfind("syscall " + std::to_string(nr) + "(", 0) != 0) continue;
      EmuOptions::KernelAnswer& answer = out.emplace_back();
      answer.nr = nr;
      for (const core::RegisterWrite& w : e.registers) {
        if (w.reg == rax) std::memcpy(&answer.result, w.value, sizeof answer.result);
      }
      for (const core::MemoryAccess& w : e.writes)
        answer.bytes.insert(answer.bytes.end(), w.data.begin(), w.data.end());
    }
  });
  return out;
}

// A system call event's number, arguments and result (its description,
// core::SyscallNote: "syscall N(0x.., ..) = 0x.."); false for other events.
bool ParseSyscall(std::string_view text, std::uint64_t* nr, std::vector<std::uint64_t>* args,
                  std::uint64_t* result) {
  constexpr std::string_view kPrefix = "syscall ";
  const std::size_t open = text.find('('), close = text.find(") = ");
  if (text.rfind(kPrefix, 0) != 0 || open == std::string_view::npos ||
      close == std::string_view::npos)
    return false;
  const auto number = core::ParseNumber(text.substr(kPrefix.size(), open - kPrefix.size()));
  const auto value = core::ParseNumber(text.substr(close + 4));
  if (!number || !value) return false;
  *nr = *number;
  *result = *value;
  args->clear();
  for (std::string_view rest = text.substr(open + 1, close - open - 1); !rest.empty();) {
    const std::size_t comma = rest.find(", ");
    const auto arg = core::ParseNumber(rest.substr(0, comma));
    if (!arg) return false;
    args->push_back(*arg);
    rest = comma == std::string_view::npos ? std::string_view() : rest.substr(comma + 2);
  }
  return true;
}

// What a trace's reads from /dev/random or /dev/urandom returned (the
// descriptors its openat calls opened on those paths), and what its
// successful stat-family calls wrote (the struct stat): EmuOptions's
// random_reads and file_stats.
void FileAnswers(const std::string& trace, EmuOptions* out) {
  auto source = core::MapFile(trace);
  if (!source.ok()) return;
  auto reader = core::OpenTraceSource(*source);
  if (!reader.ok()) return;
  Replay r(**reader);
  auto bytes_at = [&](core::Address a, std::uint64_t n) {
    std::vector<std::uint8_t> bytes(n);
    for (std::uint64_t i = 0; i < n; ++i) bytes[i] = r.ByteOrZero(a + i);
    return bytes;
  };
  std::set<std::uint64_t> random_fds;
  std::uint64_t nr = 0, result = 0;
  std::vector<std::uint64_t> args;
  core::Event e;
  while (true) {
    core::Expected<bool> more = (*reader)->Next(&e);
    if (!more.ok() || !*more) break;
    const bool syscall = ParseSyscall(e.description, &nr, &args, &result) && args.size() == 6;
    std::string path;
    if (syscall && nr == 257) {  // openat: the path is in memory before the call
      for (core::Address a = args[1]; r.ByteOrZero(a) != 0 && path.size() < 4096; ++a)
        path.push_back(static_cast<char>(r.ByteOrZero(a)));
    }
    r.Apply(e);
    if (!syscall || result > ~std::uint64_t{4095}) continue;
    if (nr == 257 && (path == "/dev/urandom" || path == "/dev/random")) random_fds.insert(result);
    if (nr == 3) random_fds.erase(args[0]);  // close
    if (nr == 0 && random_fds.count(args[0]))
      out->random_reads.push_back(bytes_at(args[1], result));
    if (nr == 4 || nr == 5 || nr == 6 || nr == 262) {  // stat, fstat, lstat, newfstatat
      out->file_stats.push_back({nr, result, bytes_at(nr == 262 ? args[2] : args[1], 144)});
    }
  }
}

// The signals a trace records without effect (ignored: SIGCHLD when an
// untraced child exits), each after how many instructions: where they
// arrive depends on when the child ended (EmuOptions::quiet_signals).
std::vector<EmuOptions::QuietSignal> QuietSignals(const std::string& trace) {
  std::vector<EmuOptions::QuietSignal> out;
  std::uint64_t instructions = 0;
  ForEachEvent(trace, [&](const core::Event& e) {
    if (e.kind != core::EventKind::kInterrupt) {
      if (e.kind == core::EventKind::kInstruction || e.kind == core::EventKind::kSyscall)
        ++instructions;
      return;
    }
    if (!e.writes.empty()) return;  // a handled one: its frame (the reader lists rip for both)
    const core::EventNotes notes = core::ReadEventNotes(e);
    out.push_back({instructions, notes.signal, notes.siginfo});
  });
  return out;
}

// What each rdtsc of a trace returned (edx:eax after it).
std::vector<std::uint64_t> RdtscResults(const std::string& trace) {
  std::vector<std::uint64_t> out;
  auto source = core::MapFile(trace);
  if (!source.ok()) return out;
  auto reader = core::OpenTraceSource(*source);
  if (!reader.ok()) return out;
  Replay r(**reader);
  const core::ArchDescription& arch = core::X86_64();
  const core::RegisterId rip = *arch.Find("rip"), rax = *arch.Find("rax"), rdx = *arch.Find("rdx");
  core::Event e;
  while (true) {
    core::Expected<bool> more = (*reader)->Next(&e);
    if (!more.ok() || !*more) break;
    const core::Address pc = r.regs.u64(rip);
    const bool rdtsc = r.ByteOrZero(pc) == 0x0f &&
                       (r.ByteOrZero(pc + 1) == 0x31 ||
                        (r.ByteOrZero(pc + 1) == 0x01 && r.ByteOrZero(pc + 2) == 0xf9));
    r.Apply(e);
    if (rdtsc) out.push_back((r.regs.u64(rdx) << 32) | (r.regs.u64(rax) & 0xffffffff));
  }
  return out;
}

// AT_RANDOM's 16 bytes in a trace's initial stack (argc, argv, envp, auxv).
std::vector<std::uint8_t> AtRandom(const std::string& trace) {
  auto source = core::MapFile(trace);
  if (!source.ok()) return {};
  auto reader = core::OpenTraceSource(*source);
  if (!reader.ok()) return {};
  const Replay r(**reader);
  auto word = [&](core::Address a) {
    std::uint64_t v = 0;
    for (int i = 0; i < 8; ++i) v |= std::uint64_t(r.ByteOrZero(a + i)) << (8 * i);
    return v;
  };
  core::Address at = r.regs.u64(*core::X86_64().Find("rsp"));
  at += 8 * (word(at) + 2);
  while (word(at) != 0) at += 8;
  for (at += 8; word(at) != 0; at += 16) {
    if (word(at) != 25) continue;  // AT_RANDOM
    std::vector<std::uint8_t> bytes(16);
    for (int i = 0; i < 16; ++i)
      bytes[i] = static_cast<std::uint8_t>(r.ByteOrZero(word(at + 8) + i));
    return bytes;
  }
  return {};
}

// Records in a child process whose children live in a new PID namespace,
// so that the program is pid 1 in both runs (getpid, set_tid_address and
// the tid glibc stores in the TCB are the same): the trace file, then a
// RecordResult or an error message through a pipe.
void RecordWith(bool emu, const CrossCheckCase& program, Recording* out,
                EmuOptions emu_options = {}) {
  out->path = ::testing::TempDir() + "/" + program.name + (emu ? ".emu" : ".ptrace") + ".ucir";
  int fds[2];
  ASSERT_EQ(pipe(fds), 0);
  const pid_t worker = fork();
  ASSERT_GE(worker, 0);
  if (worker == 0) {
    close(fds[0]);
    auto report = [&](const std::string& error, const RecordResult& r) {
      const std::uint32_t n = static_cast<std::uint32_t>(error.size());
      [[maybe_unused]] ssize_t w = write(fds[1], &r, sizeof r);
      w = write(fds[1], &n, sizeof n);
      w = write(fds[1], error.data(), n);
      _exit(0);
    };
    if (unshare(CLONE_NEWPID) != 0)
      report(std::string("unshare(CLONE_NEWPID): ") + strerror(errno), {});
    auto sink = UsercornSink::Create(out->path);
    if (!sink.ok()) report(sink.status().message(), {});
    RecordOptions options;
    options.spawn.argv = ArgvOf(program);
    options.spawn.stdout_fd = open("/dev/null", O_WRONLY);
    // Its own stderr: a program may change the file's flags (make sets
    // O_APPEND), which the other run would then see.
    options.spawn.stderr_fd = open("/dev/null", O_WRONLY);
    options.portable_cpuid = true;
    options.hide_vdso = true;  // implied by the emu engine: the same ld.so path
    options.check_interval = 0;
    core::Expected<RecordResult> r =
        emu ? RecordEmulated(options, **sink, emu_options) : Record(options, **sink);
    if (!r.ok()) report(std::string(emu ? "emu: " : "ptrace: ") + r.status().message(), {});
    report("", *r);
  }
  close(fds[1]);
  RecordResult result;
  std::uint32_t n = 0;
  const bool got = read(fds[0], &result, sizeof result) == sizeof result &&
                   read(fds[0], &n, sizeof n) == sizeof n;
  std::string error(got ? n : 0, '\0');
  if (got && n > 0) {
    ASSERT_EQ(read(fds[0], error.data(), n), static_cast<ssize_t>(n));
  }
  close(fds[0]);
  int status = 0;
  struct rusage usage {};
  wait4(worker, &status, 0, &usage);
  ASSERT_TRUE(got) << "the recording process died (status " << status << ")";
  ASSERT_TRUE(error.empty()) << error;
  EXPECT_EQ(result.end, RecordResult::End::kExited);
  EXPECT_EQ(result.missed_bytes, 0u);
  out->result = result;
  // The figures of docs/usage-record.md (the recorder and the program: the
  // worker waited for the program).
  const double cpu = usage.ru_utime.tv_sec + usage.ru_stime.tv_sec +
                     (usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1e6;
  std::printf("%s: %llu instructions, %.1f s CPU\n", emu ? "emu" : "ptrace",
              static_cast<unsigned long long>(result.instructions), cpu);
}

class EngineCrossCheck : public ::testing::TestWithParam<CrossCheckCase> {};

TEST_P(EngineCrossCheck, EmuTraceEqualsPtraceTrace) {
  Recording ptrace_rec, emu_rec;
  RecordWith(false, GetParam(), &ptrace_rec);
  if (HasFatalFailure()) return;
  // The one input that differs between two runs and reaches the programs'
  // state (stack canary, pointer guard): the emulated run gets the ptrace run's.
  // The same for getrandom's bytes (malloc's tcache key).
  EmuOptions inputs;
  inputs.at_random = AtRandom(ptrace_rec.path);
  ASSERT_EQ(inputs.at_random.size(), 16u);
  inputs.getrandom = GetrandomResults(ptrace_rec.path);
  inputs.rdtsc = RdtscResults(ptrace_rec.path);
  inputs.kernel_answers = KernelAnswers(ptrace_rec.path);
  FileAnswers(ptrace_rec.path, &inputs);
  inputs.quiet_signals = QuietSignals(ptrace_rec.path);
  RecordWith(true, GetParam(), &emu_rec, inputs);
  if (HasFatalFailure()) return;
  // The programs ran to their end (127: ld.so refused the CPU the table describes).
  EXPECT_NE(ptrace_rec.result.exit_code, 127);
  EXPECT_EQ(emu_rec.result.exit_code, ptrace_rec.result.exit_code);
  EXPECT_EQ(emu_rec.result.instructions, ptrace_rec.result.instructions);
  EXPECT_EQ(emu_rec.result.syscalls, ptrace_rec.result.syscalls);

  test_util::CompareTraces(ptrace_rec.path, emu_rec.path, "ptrace", "emu");
  if (HasFatalFailure()) return;
  std::remove(ptrace_rec.path.c_str());
  std::remove(emu_rec.path.c_str());
}

std::vector<CrossCheckCase> Programs() {
  std::vector<CrossCheckCase> out;
  for (const char* p : {"loop", "strings", "syscalls", "scenario", "dataflow", "tracepoints"}) {
    // Two of the four builds (recorder_test replays all four with the ptrace
    // engine): together they cover -O0/-O2 and static/PIE.
    for (const char* build : {"O0_pie", "O2_static"}) {
      out.push_back({std::string(p) + "_" + build, {}});
    }
  }
  // Random bytes read from /dev/urandom, a new file's inode and times.
  out.push_back({"varying_O2_static", {}});
  // An untraced child's exit: SIGCHLD, ignored, wherever the parent is.
  out.push_back({"forks_O2_static", {}});
  return out;
}

// BACKSTEP_CROSSCHECK_COMMANDS: "cmd args;cmd args", each program looked up
// on PATH.
std::vector<CrossCheckCase> RealPrograms() {
  std::vector<CrossCheckCase> out;
  const char* commands = std::getenv("BACKSTEP_CROSSCHECK_COMMANDS");
  std::istringstream list(commands ? commands : "");
  std::string command;
  while (std::getline(list, command, ';')) {
    std::istringstream words(command);
    CrossCheckCase c{"real" + std::to_string(out.size()), {}};
    for (std::string w; words >> w;) c.argv.push_back(w);
    if (c.argv.empty()) continue;
    for (const char* dir : {"/usr/bin/", "/bin/"}) {
      if (c.argv[0].find('/') == std::string::npos && access((dir + c.argv[0]).c_str(), X_OK) == 0)
        c.argv[0] = dir + c.argv[0];
    }
    out.push_back(std::move(c));
  }
  return out;
}

INSTANTIATE_TEST_SUITE_P(Programs, EngineCrossCheck, ::testing::ValuesIn(Programs()),
                         [](const auto& p) { return p.param.name; });
INSTANTIATE_TEST_SUITE_P(RealPrograms, EngineCrossCheck, ::testing::ValuesIn(RealPrograms()),
                         [](const auto& p) { return p.param.name; });

}  // namespace
}  // namespace backstep::record
