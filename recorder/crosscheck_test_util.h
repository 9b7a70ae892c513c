// What the recorder's engine cross-checks (emu/emu_crosscheck_test.cc: emu
// vs ptrace; native/native_crosscheck_test.cc: native vs ptrace) share: the
// programs to record (a test program, or a real one named in
// BACKSTEP_CROSSCHECK_COMMANDS), a recording made in a new PID namespace
// (the program is pid 2 in every run), and the nondeterministic inputs read
// back from a ptrace trace so that the other engine's run is given them:
// AT_RANDOM's bytes, getrandom's, rdtsc's, the answers of the system calls
// that vary from run to run (the clock reads, sysinfo), the bytes read from
// /dev/urandom or /dev/random (perl's hash seed), the inode numbers and
// times stat-family calls return (files a run creates or writes), and where
// an ignored signal arrived (SIGCHLD when an untraced child exits).
#pragma once

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sched.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
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
#include "recorder/pid_namespace_test_util.h"
#include "recorder/recorder.h"
#include "recorder/replayed_state_test_util.h"
#include "recorder/signal_disposition.h"
#include "recorder/usercorn_sink.h"

namespace backstep::record::test_util {

using Replay = ReplayedState;

// A program to record: a test program's name, or a command line.
struct CrossCheckCase {
  std::string name;               // the test's name and the traces' file names
  std::vector<std::string> argv;  // empty: the test program `name`
};

inline void PrintTo(const CrossCheckCase& c, std::ostream* os) { *os << c.name; }

inline std::vector<std::string> ArgvOf(const CrossCheckCase& c) {
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
inline std::vector<std::vector<std::uint8_t>> GetrandomResults(const std::string& trace) {
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
inline std::vector<EmuOptions::KernelAnswer> KernelAnswers(const std::string& trace) {
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

// What each rdtsc of a trace returned (edx:eax after it).
inline std::vector<std::uint64_t> RdtscResults(const std::string& trace) {
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
inline std::vector<std::uint8_t> AtRandom(const std::string& trace) {
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

// A system call event's number, arguments and result (its description,
// core::SyscallNote: "syscall N(0x.., ..) = 0x.."); false for other events.
inline bool ParseSyscall(std::string_view text, std::uint64_t* nr, std::vector<std::uint64_t>* args,
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
// successful stat-family calls wrote (the struct stat): GivenInputs'
// random_reads and file_stats.
struct FileAnswers {
  std::vector<std::vector<std::uint8_t>> random_reads;
  std::vector<KernelAnswer> file_stats;
};
inline FileAnswers FileAnswersOf(const std::string& trace) {
  FileAnswers out;
  auto source = core::MapFile(trace);
  if (!source.ok()) return out;
  auto reader = core::OpenTraceSource(*source);
  if (!reader.ok()) return out;
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
    if (nr == 0 && random_fds.count(args[0])) out.random_reads.push_back(bytes_at(args[1], result));
    if (nr == 4 || nr == 5 || nr == 6 || nr == 262) {  // stat, fstat, lstat, newfstatat
      out.file_stats.push_back({nr, result, bytes_at(nr == 262 ? args[2] : args[1], 144)});
    }
  }
  return out;
}

// Every input of `trace` that differs between two runs of a program, into
// `options` (EmuOptions or NativeOptions, which name them alike): AT_RANDOM,
// rdtsc, getrandom, the clock reads and sysinfo, random-device reads and
// the stat family's inode numbers and times.
template <typename Options>
void GiveRecordedInputs(const std::string& trace, Options* options) {
  options->at_random = AtRandom(trace);
  options->rdtsc = RdtscResults(trace);
  options->getrandom = GetrandomResults(trace);
  options->kernel_answers = KernelAnswers(trace);
  FileAnswers files = FileAnswersOf(trace);
  options->random_reads = std::move(files.random_reads);
  options->file_stats = std::move(files.file_stats);
}

// The signals a trace records without effect (ignored: SIGCHLD when an
// untraced child exits), each after how many instructions: where they
// arrive depends on when the child ended (EmuOptions::quiet_signals).
inline std::vector<EmuOptions::QuietSignal> QuietSignals(const std::string& trace) {
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
  // The fatal one that ended the program (crash.c) is not given: every
  // engine records it where the fault raises it.
  if (!out.empty() && out.back().after == instructions && KillsByDefault(out.back().signal))
    out.pop_back();
  return out;
}

// Records `program` into `out->path` in a child process whose children
// live in a new PID namespace, so that the program is pid 2 in every run
// (getpid, set_tid_address and the tid glibc stores in the TCB are the
// same). `record` runs there with the options every cross-check uses
// (--no-vdso, stdout and stderr to /dev/null, no consistency checks) and
// may change them; its RecordResult or error message comes back through a
// pipe; `engine` names it in errors.
inline void RecordInNewPidNamespace(
    const CrossCheckCase& program, const std::string& engine,
    const std::function<core::Expected<RecordResult>(RecordOptions&, RecordingSink&)>& record,
    Recording* out) {
  int fds[2];
  ASSERT_EQ(pipe(fds), 0);
  const pid_t worker = fork();
  ASSERT_GE(worker, 0);
  if (worker == 0) {
    close(fds[0]);
    pid_t init = -1;  // the namespace's (pid_namespace_test_util.h)
    auto report = [&](const std::string& error, const RecordResult& r) {
      EndPidNamespace(init);
      const std::uint32_t n = static_cast<std::uint32_t>(error.size());
      [[maybe_unused]] ssize_t w = write(fds[1], &r, sizeof r);
      w = write(fds[1], &n, sizeof n);
      w = write(fds[1], error.data(), n);
      _exit(0);
    };
    if (std::string error = EnterNewPidNamespace(&init); !error.empty()) report(error, {});
    auto sink = UsercornSink::Create(out->path);
    if (!sink.ok()) report(sink.status().message(), {});
    RecordOptions options;
    options.spawn.argv = ArgvOf(program);
    options.spawn.stdout_fd = open("/dev/null", O_WRONLY);
    // Its own stderr: a program may change the file's flags (make sets
    // O_APPEND), which the other run would then see.
    options.spawn.stderr_fd = open("/dev/null", O_WRONLY);
    options.hide_vdso = true;  // implied by the emu and native engines: the same ld.so path
    options.check_interval = 0;
    core::Expected<RecordResult> r = record(options, **sink);
    if (!r.ok()) report(engine + ": " + r.status().message(), {});
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
  // To its end: exited, or killed by a signal (crash.c).
  EXPECT_TRUE(result.end == RecordResult::End::kExited || result.end == RecordResult::End::kKilled)
      << "the recording ended before the program did";
  EXPECT_EQ(result.missed_bytes, 0u);
  out->result = result;
  // The figures of docs/usage-record.md (the recorder and the program: the
  // worker waited for the program).
  const double cpu = usage.ru_utime.tv_sec + usage.ru_stime.tv_sec +
                     (usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1e6;
  std::printf("%s: %llu instructions, %.1f s CPU\n", engine.c_str(),
              static_cast<unsigned long long>(result.instructions), cpu);
}

// BACKSTEP_CROSSCHECK_COMMANDS: "cmd args;cmd args", each program looked up
// on PATH.
inline std::vector<CrossCheckCase> RealPrograms() {
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

}  // namespace backstep::record::test_util
