// backstep_fuzz_seeds <fuzzer-name> <dir>: writes a seed corpus for one
// fuzzer into <dir> (created if needed). ctest runs it before each fuzzer.
//
// Each fuzzer has one branch in kSeeders below. A fuzzer without a branch
// gets an empty corpus (libFuzzer then starts from nothing), so adding a
// fuzzer never breaks this tool.
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>
#include <vector>

#include "backstep/testing/index_fuzz.h"
#include "backstep/testing/reader_fuzz.h"
#include "backstep/testing/reven_fixtures.h"
#include "backstep/testing/tfile_fixtures.h"
#include "backstep/testing/x64dbg_fixtures.h"
#include "recorder/native/native_log.h"
#include "recorder/native/snapshot_file.h"

namespace {

namespace fs = std::filesystem;

bool WriteSeed(const fs::path& dir, const std::string& name, std::string_view bytes) {
  std::ofstream out(dir / name, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  return static_cast<bool>(out);
}

// `$<payload>#<checksum>`, written here so the seeds do not depend on gdbstub.
std::string Frame(std::string_view payload) {
  unsigned sum = 0;
  for (unsigned char c : payload) sum += c;
  char checksum[3];
  std::snprintf(checksum, sizeof checksum, "%02x", sum & 0xff);
  return "$" + std::string(payload) + "#" + checksum;
}

// gdbstub_session_fuzzer: byte 0 = chunk size, byte 1 = capabilities off,
// then the client's byte stream (docs/protocol.md §2 sequences and more).
bool SeedGdbstubSession(const fs::path& dir) {
  const std::vector<std::vector<std::string_view>> sessions = {
      {"qSupported:multiprocess+;swbreak+;hwbreak+;xmlRegisters=i386",
       "vMustReplyEmpty",
       "QStartNoAckMode",
       "+",
       "Hgp0.0",
       "qXfer:features:read:target.xml:0,1000",
       "qTStatus",
       "?",
       "qXfer:threads:read::0,1000",
       "qAttached:1",
       "Hc-1",
       "qOffsets",
       "g",
       "qXfer:auxv:read::0,1000",
       "qSymbol::",
       "m400000,40",
       "vCont;s:p1.1;c:p1.-1",
       "Z0,401010,1",
       "vCont;c:p1.-1",
       "Hcp1.1",
       "bs",
       "bc",
       "z0,401010,1",
       "D;1"},
      {"QStartNoAckMode",
       "+",
       "qSupported:xmlRegisters=i386;multiprocess+;swbreak+",
       "QThreadSuffixSupported",
       "QListThreadsInStopReply",
       "qHostInfo",
       "vCont?",
       "QEnableErrorStrings",
       "qProcessInfo",
       "qC",
       "?",
       "p10;thread:p1.1;",
       "x0,0",
       "m400f00,200",
       "qMemoryRegionInfo:400000",
       "qfThreadInfo",
       "qsThreadInfo",
       "c",
       "_M1000,rwx",
       "qRcmd,696e666f",
       "k"},
      {"Z2,404000,8", "c", "bc", "QTFrame:3", "QTFrame:pc:401008", "QTFrame:range:1:2",
       "QTFrame:ffffffff", "qSearch:memory:400000;1000;1011", "m0,ffffffffffffffff", "c"},
  };
  int index = 0;
  for (const auto& packets : sessions) {
    std::string stream(2, '\0');               // all capabilities on
    stream[0] = static_cast<char>(3 + index);  // chunk sizes 4, 5, 6
    for (std::string_view p : packets) stream += p == "+" ? std::string("+") : Frame(p);
    if (!WriteSeed(dir, "session" + std::to_string(index++), stream)) return false;
  }
  // Framing corner cases: RLE, escapes, bad checksum, interrupt.
  std::string framing = std::string("\x00\x00", 2) + Frame("m400000,* ") + Frame("X0,1:}\x03") +
                        "$qC#00" + Frame("c") + "\x03" + "$m1$qC#b4";
  return WriteSeed(dir, "framing", framing);
}

bool WriteBytes(const fs::path& dir, const std::string& name,
                const std::vector<std::uint8_t>& bytes) {
  return WriteSeed(dir, name,
                   std::string_view(reinterpret_cast<const char*>(bytes.data()), bytes.size()));
}

// reven_fuzzer: small valid trace.bin files from our writer (every event
// feature, with and without event_count) and the two producers' machines.
bool SeedReven(const fs::path& dir) {
  namespace t = backstep::core::testing;
  return WriteBytes(dir, "small.bin", t::SmallRevenTrace()) &&
         WriteBytes(dir, "small_unpatched.bin", t::SmallRevenTrace(false)) &&
         WriteBytes(dir, "panda.bin", t::SmallProducerTrace(true)) &&
         WriteBytes(dir, "bochs.bin", t::SmallProducerTrace(false));
}

// usercorn_fuzzer: small valid UCIR files from our writer (every op, both
// chunk types, straddling chunks) and a generated program's trace.
bool SeedUsercorn(const fs::path& dir) {
  for (const auto& [name, bytes] : backstep::core::testing::UsercornSeedFiles()) {
    if (!WriteBytes(dir, name, bytes)) return false;
  }
  return true;
}

// tfile_fuzzer: small valid files from our writer (with and without tdesc,
// every block kind), a hand-made one, and gdb's own samples when the shared
// samples directory is there.
bool SeedTfile(const fs::path& dir) {
  namespace t = backstep::core::testing;
  t::TfileBytes hand("R 10\ntsv 2:0:0:68697473\ntp T1:1000:E:0:0\n");
  hand.Frame(1).R(16, 7).M(0x10, "ab").V(2, 5).S("s").End().Frame(1).End().EndMarker();
  if (!WriteBytes(dir, "small.tf", t::SmallTfile()) ||
      !WriteBytes(dir, "small_no_tdesc.tf", t::SmallTfile(false)) ||
      !WriteBytes(dir, "hand.tf", hand.bytes())) {
    return false;
  }
  for (const char* name : {"work_amd64.tf", "stepping_amd64.tf"}) {
    const auto bytes = t::ReadFileBytes(t::SamplesDir() + "/gdb_tfile/" + name);
    if (!bytes.empty() && !WriteBytes(dir, name, bytes)) return false;
  }
  return true;
}

// x64dbg_fuzzer: the hand-made program from our writer, both pointer sizes,
// one and two threads, with registers revealed early (full dumps) or late.
bool SeedX64dbg(const fs::path& dir) {
  namespace t = backstep::core::testing;
  int index = 0;
  for (bool i386 : {false, true}) {
    for (bool threads : {false, true}) {
      t::X64dbgProgramOptions o;
      o.i386 = i386;
      o.two_threads = threads;
      o.instructions = threads ? 600 : 40;
      o.reveal_at = threads ? 0 : 20;
      auto bytes = t::X64dbgProgramBytes(o);
      if (!bytes.ok() ||
          !WriteBytes(dir, "program" + std::to_string(index++) + (i386 ? ".trace32" : ".trace64"),
                      *bytes)) {
        return false;
      }
    }
  }
  return true;
}

// bap_fuzzer: small valid .frames files (every frame kind, both producer
// styles; versions 1 and 3; unfinished; i386) and our writer's output of a
// generated 3-thread trace.
bool SeedBap(const fs::path& dir) {
  for (const auto& [name, bytes] : backstep::core::testing::BapSeedFiles()) {
    if (!WriteBytes(dir, name, bytes)) return false;
  }
  return true;
}

struct Seeder {
  std::string_view fuzzer;
  bool (*write)(const fs::path& dir);
};

// index_fuzzer: valid indexes of the fuzz body's fixed trace.
// native_log_fuzzer: logs our writer wrote (WriteNativeLog), read back.
bool SeedNativeLog(const fs::path& dir) {
  backstep::record::NativeLog log;
  log.argv = {"/bin/true", "-x"};
  log.cwd = "/tmp";
  log.environment = {"HOME=/root", "LANG=C"};
  log.files.push_back({"/bin/true", 1, 2, 3, 4});
  for (int i = 0; i < 3; ++i) {
    backstep::record::LoggedSyscall& call = log.syscalls.emplace_back();
    call.entry.orig_rax = static_cast<unsigned>(i);
    call.exit.rax = 64;
    call.writes.push_back(
        {0x7fff0000u + static_cast<unsigned>(i), std::vector<std::uint8_t>(64, 7)});
  }
  log.syscalls[1].signal_after = 10;
  log.syscalls[1].siginfo.assign(128, 1);
  // A file mmap with the file it mapped.
  backstep::record::LoggedSyscall& mmap = log.syscalls.emplace_back();
  mmap.entry.orig_rax = 9;
  mmap.entry.rsi = 0x2000;
  mmap.exit.rax = 0x7ffff7dd0000u;
  mmap.mapped =
      backstep::record::LoggedFileMapping{"/usr/lib/x86_64-linux-gnu/libc.so.6", 0x1000, 0x2000};
  // A SysV segment attached, then detached.
  backstep::record::LoggedSyscall& shmat = log.syscalls.emplace_back();
  shmat.entry.orig_rax = 30;
  shmat.exit.rax = 0x7ffff7ff0000u;
  shmat.mapped = backstep::record::LoggedFileMapping{"/SYSV00000000 (deleted)", 0, 0x3000};
  shmat.writes.push_back({0x7ffff7ff0000u, std::vector<std::uint8_t>(16, 'x')});
  backstep::record::LoggedSyscall& shmdt = log.syscalls.emplace_back();
  shmdt.entry.orig_rax = 67;
  shmdt.entry.rdi = 0x7ffff7ff0000u;
  shmdt.mapped = backstep::record::LoggedFileMapping{"/SYSV00000000 (deleted)", 0, 0x3000};
  log.rdtsc = {1, 2, 3};
  log.snapshots.push_back({2, "x.nlog.snap0"});
  const fs::path path = dir / "one.nlog";
  // Written and valid: the fuzzer starts from a log the reader accepts.
  if (!backstep::record::WriteNativeLog(log, path.string()).ok() ||
      !backstep::record::ReadNativeLog(path.string()).ok())
    return false;
  log.syscalls.clear();
  log.snapshots.clear();
  return backstep::record::WriteNativeLog(log, (dir / "empty.nlog").string()).ok();
}

// native_snapshot_fuzzer: snapshots our writer wrote (WriteSnapshot).
bool SeedNativeSnapshot(const fs::path& dir) {
  backstep::record::Snapshot s;
  s.syscall = 3;
  s.rdtsc = 1;
  s.regs.rip = 0x401000;
  s.xstate.assign(832, 0);
  s.sigmask = 1 << 9;
  s.signals.actions[10].fill(2);
  s.signals.altstack.assign(24, 3);
  s.mappings = {{0x400000, 0x2000, 5}, {0x7ffff000, 0x1000, 3}};
  s.memory.push_back({0x400000, std::vector<std::uint8_t>(48, 0x90)});
  s.memory.push_back({0x7ffff800, std::vector<std::uint8_t>(16, 1)});
  if (!backstep::record::WriteSnapshot(s, (dir / "one.snap").string()).ok()) return false;
  return backstep::record::WriteSnapshot(backstep::record::Snapshot{},
                                         (dir / "empty.snap").string())
      .ok();
}

bool SeedIndex(const fs::path& dir) {
  int n = 0;
  for (const auto& bytes : backstep::core::testing::IndexSeedFiles()) {
    if (!WriteBytes(dir, "index" + std::to_string(n++), bytes)) return false;
  }
  return n > 0;
}

constexpr Seeder kSeeders[] = {
    {"gdbstub_session_fuzzer", SeedGdbstubSession},
    {"reven_fuzzer", SeedReven},
    {"usercorn_fuzzer", SeedUsercorn},
    {"tfile_fuzzer", SeedTfile},
    {"x64dbg_fuzzer", SeedX64dbg},
    {"bap_fuzzer", SeedBap},
    {"index_fuzzer", SeedIndex},
    {"native_log_fuzzer", SeedNativeLog},
    {"native_snapshot_fuzzer", SeedNativeSnapshot},
};

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: backstep_fuzz_seeds <fuzzer-name> <dir>\n");
    return 2;
  }
  std::string_view name = argv[1];
  fs::path dir = argv[2];
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) {
    std::fprintf(stderr, "backstep_fuzz_seeds: %s: %s\n", argv[2], ec.message().c_str());
    return 1;
  }
  for (const Seeder& seeder : kSeeders) {
    if (seeder.fuzzer != name) continue;
    if (!seeder.write(dir)) {
      std::fprintf(stderr, "backstep_fuzz_seeds: cannot write seeds into %s\n", argv[2]);
      return 1;
    }
    return 0;
  }
  std::fprintf(stderr, "backstep_fuzz_seeds: no seeds for %s; empty corpus\n", argv[1]);
  return 0;
}
