// Records the test programs (tests/programs/*.c, -O0/-O2, static/PIE) and
// checks that the state the usercorn reader rebuilds from each trace equals
// the live program's state at the same instruction count, observed by a
// plain ptrace stepper written here, independently of the recorder: all
// GPRs, rip, eflags, selectors, fs/gs base at every position, x87 control
// and xmm registers every 16, all writable memory every 20000 and before
// exit. The stepper reproduces the recorder's documented normalisations
// (rseq -> ENOSYS, TF/RF out of r11 after syscall and of pushf's stores) and
// takes nondeterministic inputs from the trace (AT_RANDOM's bytes, cpuid,
// rdtsc, getrandom's bytes, process and thread ids). The reads the recorder gives
// each instruction (with their contents) are checked against the live
// program's memory before the same instruction.
#include <cpuid.h>
#include <elf.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/personality.h>
#include <sys/ptrace.h>
#include <sys/uio.h>
#include <sys/user.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <fstream>
#include <map>
#include <memory>
#include <string>
#include <utility>

#include "backstep/core/byte_source.h"
#include "backstep/core/format_registry.h"
#include "recorder/recorder.h"
#include "recorder/replayed_state_test_util.h"
#include "recorder/usercorn_sink.h"

namespace backstep::record {
namespace {

using core::RegisterId;

constexpr std::uint64_t kPageSize = 4096;

using Replay = test_util::ReplayedState;

// The independent stepper.
class Live {
 public:
  explicit Live(const std::string& path) {
    pid_ = fork();
    if (pid_ == 0) {
      const int null = open("/dev/null", O_WRONLY);
      dup2(null, 1);
      close(null);
      personality(ADDR_NO_RANDOMIZE);
      ptrace(PTRACE_TRACEME, 0, nullptr, nullptr);
      execl(path.c_str(), path.c_str(), nullptr);
      _exit(127);
    }
    int status = 0;
    waitpid(pid_, &status, 0);
    ptrace(PTRACE_SETOPTIONS, pid_, nullptr, PTRACE_O_EXITKILL);
    mem_ = open(("/proc/" + std::to_string(pid_) + "/mem").c_str(), O_RDWR);
  }
  ~Live() {
    if (pid_ > 0) kill(pid_, SIGKILL), waitpid(pid_, nullptr, 0);
    close(mem_);
  }
  user_regs_struct Regs() const {
    user_regs_struct r{};
    ptrace(PTRACE_GETREGS, pid_, nullptr, &r);
    return r;
  }
  user_fpregs_struct FpRegs() const {
    user_fpregs_struct f{};
    ptrace(PTRACE_GETFPREGS, pid_, nullptr, &f);
    return f;
  }
  std::vector<std::uint8_t> XState() const {
    std::vector<std::uint8_t> x(8192);
    iovec iov{x.data(), x.size()};
    if (ptrace(PTRACE_GETREGSET, pid_, reinterpret_cast<void*>(NT_X86_XSTATE), &iov) != 0)
      return {};
    x.resize(iov.iov_len);
    return x;
  }
  std::vector<std::uint8_t> Read(std::uint64_t a, std::size_t n) const {
    std::vector<std::uint8_t> out(n);
    const ssize_t got = pread(mem_, out.data(), n, static_cast<off_t>(a));
    out.resize(got > 0 ? got : 0);
    return out;
  }
  void Write(std::uint64_t a, const void* data, std::size_t n) const {
    ASSERT_EQ(pwrite(mem_, data, n, static_cast<off_t>(a)), static_cast<ssize_t>(n));
  }
  std::vector<std::uint64_t> Auxv() const {
    std::ifstream in("/proc/" + std::to_string(pid_) + "/auxv", std::ios::binary);
    std::vector<char> raw((std::istreambuf_iterator<char>(in)), {});
    std::vector<std::uint64_t> v(raw.size() / 8);
    std::memcpy(v.data(), raw.data(), v.size() * 8);
    return v;
  }
  // One position: an instruction, or a handled signal's delivery (as the
  // recorder, with the TF of single-stepping out of the frame's saved
  // rflags); false when the program exited. `replay` provides the results
  // of cpuid and rdtsc (the state after the same instruction).
  bool Step(const Replay& replay) {
    if (pending_ != 0) return Deliver(std::exchange(pending_, 0));
    user_regs_struct r = Regs();
    std::vector<std::uint8_t> code = Read(r.rip, 3);
    code.resize(3);
    const bool syscall = code[0] == 0x0f && code[1] == 0x05;
    const bool pushf = code[0] == 0x9c;
    // cpuid (which the recorder answers without stepping it; the APIC ids
    // differ between runs and CPUs) and rdtsc(p) (the counter differs, and
    // some VMs ignore PR_TSC_SIGSEGV): the trace's results, not stepped.
    const bool cpuid = code[0] == 0x0f && code[1] == 0xa2;
    const bool rdtsc = code[0] == 0x0f && code[1] == 0x31;
    const bool rdtscp = code[0] == 0x0f && code[1] == 0x01 && code[2] == 0xf9;
    if (cpuid || rdtsc || rdtscp) {
      r.rax = replay.U64("rax");
      r.rdx = replay.U64("rdx");
      if (cpuid || rdtscp) r.rcx = replay.U64("rcx");
      if (cpuid) r.rbx = replay.U64("rbx");
      r.rip += rdtscp ? 3 : 2;
      ptrace(PTRACE_SETREGS, pid_, nullptr, &r);
      return true;
    }
    if (syscall && r.rax == 334) {  // rseq: the recorder makes it fail
      r.rcx = r.rip + 2;
      r.r11 = r.eflags & ~0x10100ull;
      r.rax = static_cast<std::uint64_t>(-38);
      r.rip += 2;
      ptrace(PTRACE_SETREGS, pid_, nullptr, &r);
      return true;
    }
    // tgkill names the process by the (trace's) ids the program got: the
    // live one's here, the trace's again after.
    const bool tgkill = syscall && r.rax == 234;
    const user_regs_struct asked = r;
    if (tgkill) {
      r.rdi = r.rsi = static_cast<std::uint64_t>(pid_);
      ptrace(PTRACE_SETREGS, pid_, nullptr, &r);
    }
    ptrace(PTRACE_SINGLESTEP, pid_, nullptr, 0);
    int status = 0;
    waitpid(pid_, &status, 0);
    if (WIFEXITED(status) || WIFSIGNALED(status)) {
      pid_ = -1;
      return false;
    }
    if (tgkill) {
      user_regs_struct now = Regs();
      now.rdi = asked.rdi;
      now.rsi = asked.rsi;
      ptrace(PTRACE_SETREGS, pid_, nullptr, &now);
    }
    if (WSTOPSIG(status) != SIGTRAP) {
      const user_regs_struct now = Regs();
      if (std::memcmp(&now, &r, sizeof r) == 0) return Deliver(WSTOPSIG(status));
      pending_ = WSTOPSIG(status);  // after the system call it interrupted
    }
    user_regs_struct after = Regs();
    // Process and thread ids differ between runs: take the trace's.
    if (syscall && (r.rax == 39 || r.rax == 110 || r.rax == 186 || r.rax == 218)) {
      after.rax = replay.U64("rax");
      ptrace(PTRACE_SETREGS, pid_, nullptr, &after);
    }
    // getrandom (malloc's tcache key): the trace's bytes.
    if (syscall && r.rax == 318 && static_cast<std::int64_t>(after.rax) > 0) {
      for (std::uint64_t i = 0; i < after.rax; ++i) {
        const std::uint8_t b = static_cast<std::uint8_t>(replay.Byte(r.rdi + i));
        Write(r.rdi + i, &b, 1);
      }
    }
    if (syscall && (after.r11 & 0x10100)) {
      after.r11 &= ~0x10100ull;
      ptrace(PTRACE_SETREGS, pid_, nullptr, &after);
    }
    if (pushf) {
      std::uint64_t flags = 0;
      std::memcpy(&flags, Read(after.rsp, 8).data(), 8);
      flags &= ~0x10100ull;
      Write(after.rsp, &flags, 8);
    }
    return true;
  }
  pid_t pid() const { return pid_; }

 private:
  bool Deliver(int sig) {
    ptrace(PTRACE_SINGLESTEP, pid_, nullptr, sig);
    int status = 0;
    waitpid(pid_, &status, 0);
    if (WIFEXITED(status) || WIFSIGNALED(status)) {
      pid_ = -1;
      return false;
    }
    EXPECT_EQ(WSTOPSIG(status), SIGTRAP) << "delivering signal " << sig;
    const std::uint64_t at = Regs().rsp + 184;  // rt_sigframe's saved rflags
    std::uint64_t flags = 0;
    std::memcpy(&flags, Read(at, 8).data(), 8);
    flags &= ~0x10100ull;
    Write(at, &flags, 8);
    return true;
  }
  int pending_ = 0;
  pid_t pid_ = -1;
  int mem_ = -1;
};

std::string Program(const std::string& name) {
  return std::string(BACKSTEP_RECORD_PROGRAMS) + "/" + name;
}

struct Mismatch {
  std::string what;
};

void CompareRegisters(const Live& live, const Replay& replay, std::uint64_t k, bool fp) {
  const user_regs_struct r = live.Regs();
  const struct {
    const char* name;
    std::uint64_t value, mask;
  } gprs[] = {
      {"rax", r.rax, ~0ull},         {"rbx", r.rbx, ~0ull}, {"rcx", r.rcx, ~0ull},
      {"rdx", r.rdx, ~0ull},         {"rsi", r.rsi, ~0ull}, {"rdi", r.rdi, ~0ull},
      {"rbp", r.rbp, ~0ull},         {"rsp", r.rsp, ~0ull}, {"r8", r.r8, ~0ull},
      {"r9", r.r9, ~0ull},           {"r10", r.r10, ~0ull}, {"r11", r.r11, ~0ull},
      {"r12", r.r12, ~0ull},         {"r13", r.r13, ~0ull}, {"r14", r.r14, ~0ull},
      {"r15", r.r15, ~0ull},         {"rip", r.rip, ~0ull}, {"eflags", r.eflags, ~0x10000ull},
      {"cs", r.cs, ~0ull},           {"ss", r.ss, ~0ull},   {"fs_base", r.fs_base, ~0ull},
      {"gs_base", r.gs_base, ~0ull}, {"fs", r.fs, ~0ull},   {"gs", r.gs, ~0ull},
  };
  for (const auto& g : gprs) {
    const RegisterId id = *core::X86_64().Find(g.name);
    ASSERT_TRUE(replay.regs.known(id)) << g.name << " unknown at position " << k;
    ASSERT_EQ(replay.regs.u64(id) & g.mask, g.value & g.mask)
        << g.name << " at position " << k << " (rip 0x" << std::hex << r.rip << ")";
  }
  if (!fp) return;
  const user_fpregs_struct f = live.FpRegs();
  ASSERT_EQ(replay.U64("fctrl"), f.cwd) << "fctrl at position " << k;
  ASSERT_EQ(replay.U64("fstat"), f.swd) << "fstat at position " << k;
  ASSERT_EQ(replay.U64("mxcsr"), f.mxcsr) << "mxcsr at position " << k;
  ASSERT_EQ(replay.U64("fop"), f.fop & 0x7ffu) << "fop at position " << k;
  ASSERT_EQ(replay.U64("fioff") | replay.U64("fiseg") << 32, f.rip) << "fip at position " << k;
  ASSERT_EQ(replay.U64("fooff") | replay.U64("foseg") << 32, f.rdp) << "fdp at position " << k;
  // AVX-512 (when the recorder tracks it): k0-7, zmm0-15's upper halves,
  // zmm16-31, from the standard XSAVE layout's components 5-7.
  const std::vector<std::uint8_t> x = live.XState();
  // cpuid traps in a VM: the offsets once.
  static const std::array<unsigned, 8> offsets = [] {
    std::array<unsigned, 8> o{};
    for (unsigned n = 5; n < 8; ++n) {
      unsigned a = 0, c = 0, d = 0;
      __get_cpuid_count(0xd, n, &a, &o[n], &c, &d);
    }
    return o;
  }();
  const auto component = [](unsigned n) { return offsets[n]; };
  if (replay.regs.known(*core::X86_64().Find("k0")) && x.size() > component(7) + 1024) {
    const auto check = [&](const std::string& name, std::size_t at, std::size_t n) {
      const RegisterId id = *core::X86_64().Find(name);
      ASSERT_TRUE(replay.regs.known(id)) << name;
      ASSERT_EQ(std::memcmp(replay.regs.bytes(id).data(), &x[at], n), 0)
          << name << " at position " << k << " (rip 0x" << std::hex << r.rip << ")";
    };
    for (int i = 0; i < 8; ++i) check("k" + std::to_string(i), component(5) + 8 * i, 8);
    for (int i = 0; i < 16; ++i) check("zmm" + std::to_string(i) + "h", component(6) + 32 * i, 32);
    for (int i = 0; i < 16; ++i) {
      const std::size_t at = component(7) + 64 * i;
      check("xmm" + std::to_string(16 + i), at, 16);
      check("ymm" + std::to_string(16 + i) + "h", at + 16, 16);
      check("zmm" + std::to_string(16 + i) + "h", at + 32, 32);
    }
  }
  for (int i = 0; i < 16; ++i) {
    const RegisterId id = *core::X86_64().Find("xmm" + std::to_string(i));
    ASSERT_TRUE(replay.regs.known(id));
    ASSERT_EQ(std::memcmp(replay.regs.bytes(id).data(), &f.xmm_space[4 * i], 16), 0)
        << "xmm" << i << " at position " << k << " (rip 0x" << std::hex << r.rip << ")";
  }
}

void CompareMemory(const Live& live, const Replay& replay, std::uint64_t k) {
  std::ifstream maps("/proc/" + std::to_string(live.pid()) + "/maps");
  std::string line;
  std::uint64_t compared = 0;
  while (std::getline(maps, line)) {
    unsigned long long start = 0, end = 0;
    char perms[8] = {};
    std::sscanf(line.c_str(), "%llx-%llx %7s", &start, &end, perms);
    if (perms[1] != 'w' || line.find("[vvar") != std::string::npos) continue;
    const std::vector<std::uint8_t> bytes = live.Read(start, end - start);
    for (std::size_t i = 0; i < bytes.size(); ++i) {
      const int b = replay.Byte(start + i);
      // Bytes a large fresh mapping never had written are unknown: live must be 0.
      ASSERT_EQ(b < 0 ? 0 : b, bytes[i])
          << "memory at 0x" << std::hex << start + i << std::dec << " at position " << k << " ("
          << line << ")" << (b < 0 ? " [unknown in the trace]" : "");
    }
    compared += bytes.size();
  }
  EXPECT_GT(compared, 0u);
}

// Passes everything to a UsercornSink and keeps each instruction's reads.
struct TeeSink : RecordingSink {
  explicit TeeSink(RecordingSink& next) : next_(next) {}
  core::Status OnStart(const StartInfo& s) override { return next_.OnStart(s); }
  void OnInstruction(const InstructionRecord& insn) override {
    auto& reads = per_instruction.emplace_back();
    for (const core::MemoryAccess& r : insn.reads) {
      reads.push_back({r.address, std::vector<std::uint8_t>(r.data.begin(), r.data.end())});
    }
    next_.OnInstruction(insn);
  }
  void OnSyscall(const SyscallRecord& s) override { next_.OnSyscall(s); }
  void OnSignal(const SignalRecord& s) override {
    per_instruction.emplace_back();  // an event without reads
    next_.OnSignal(s);
  }
  void OnKilled(int signal) override { next_.OnKilled(signal); }
  core::Status Finish(bool exited) override { return next_.Finish(exited); }
  std::vector<std::vector<std::pair<core::Address, std::vector<std::uint8_t>>>> per_instruction;

 private:
  RecordingSink& next_;
};

// Whether code[0..3] is xsave, xsaveopt or xsavec (0f ae /4, 0f ae /6 with
// a memory operand, 0f c7 /4), with or without REX.W.
bool SavesXState(const std::uint8_t* code) {
  if ((code[0] & 0xf8) == 0x48) ++code;  // REX.W (and R/X/B)
  if (code[0] != 0x0f || (code[2] >> 6) == 3) return false;
  const int reg = (code[2] >> 3) & 7;
  return (code[1] == 0xae && (reg == 4 || reg == 6)) || (code[1] == 0xc7 && reg == 4);
}

class RecordReplay : public ::testing::TestWithParam<std::string> {};

TEST_P(RecordReplay, TraceMatchesLiveProgram) {
  const std::string path = Program(GetParam());
  const std::string trace = ::testing::TempDir() + "/" + GetParam() + ".ucir";
  auto sink = UsercornSink::Create(trace, true);
  ASSERT_TRUE(sink.ok()) << sink.status().message();
  RecordOptions options;
  options.spawn.argv = {path};
  options.spawn.stdout_fd = open("/dev/null", O_WRONLY);
  options.check_interval = 5000;
  options.read_values = true;
  TeeSink tee(**sink);
  core::Expected<RecordResult> result = Record(options, tee);
  close(options.spawn.stdout_fd);
  ASSERT_TRUE(result.ok()) << result.status().message();
  EXPECT_EQ(result->end, RecordResult::End::kExited);
  EXPECT_EQ(result->missed_bytes, 0u);
  EXPECT_EQ(result->missed_registers, 0u);

  auto source = core::MapFile(trace);
  ASSERT_TRUE(source.ok());
  auto reader = core::OpenTraceSource(*source);
  ASSERT_TRUE(reader.ok()) << reader.status().message();
  Replay replay(**reader);
  Live live(path);

  // The auxv is in the recorded stack: argc, argv..., 0, envp..., 0, auxv.
  std::vector<std::uint64_t> auxv = live.Auxv();
  {
    core::Address at = replay.U64("rsp");
    auto word = [&](core::Address a) {
      std::uint64_t v = 0;
      for (int i = 0; i < 8; ++i) v |= std::uint64_t(replay.Byte(a + i) & 0xff) << (8 * i);
      return v;
    };
    at += 8 * (word(at) + 2);       // argc, argv, NULL
    while (word(at) != 0) at += 8;  // envp
    at += 8;
    for (std::size_t i = 0; i < auxv.size(); ++i) {
      ASSERT_EQ(word(at + 8 * i), auxv[i]) << "auxv word " << i;
    }
  }
  // AT_RANDOM's 16 bytes are random per run: the live run gets the trace's.
  for (std::size_t i = 0; i + 1 < auxv.size(); i += 2) {
    if (auxv[i] != 25) continue;
    std::uint8_t random[16];
    for (int j = 0; j < 16; ++j)
      random[j] = static_cast<std::uint8_t>(replay.Byte(auxv[i + 1] + j));
    live.Write(auxv[i + 1], random, 16);
  }

  core::Event event;
  std::uint64_t k = 0, reads_checked = 0;
  CompareRegisters(live, replay, 0, true);
  CompareMemory(live, replay, 0);
  while (true) {
    core::Expected<bool> more = (*reader)->Next(&event);
    ASSERT_TRUE(more.ok()) << more.status().message();
    ASSERT_TRUE(*more) << "trace ended before the program at position " << k;
    if (event.kind == core::EventKind::kMarker) break;  // exit
    // Before the last instruction (exit_group): all memory.
    std::vector<std::uint8_t> code = live.Read(live.Regs().rip, 4);
    code.resize(4);
    const user_regs_struct pre = live.Regs();
    if (code[0] == 0x0f && code[1] == 0x05 && pre.rax == 231) {
      CompareMemory(live, replay, k);
    }
    // What the recorder says the instruction read is what memory held.
    ASSERT_LT(k, tee.per_instruction.size());
    ASSERT_EQ(event.reads.size(), tee.per_instruction[k].size()) << "reads at position " << k;
    for (const auto& [address, data] : tee.per_instruction[k]) {
      const std::vector<std::uint8_t> held = live.Read(address, data.size());
      if (held.size() < data.size()) continue;  // [vvar]: ptrace cannot read it
      const auto diff = std::mismatch(held.begin(), held.end(), data.begin()).first - held.begin();
      ASSERT_EQ(held, data) << "read of 0x" << std::hex << address << std::dec << "+" << data.size()
                            << " at position " << k << " (rip 0x" << std::hex << pre.rip
                            << "): first difference at +" << std::dec << diff;
      ++reads_checked;
    }
    replay.Apply(event);
    ++k;
    if (!live.Step(replay)) break;
    // xsavec and xsaveopt leave out components in their initial state (or
    // unchanged since the last xrstor), as the CPU tracks them across
    // context switches: the bytes the area keeps differ from run to run
    // (ld.so's lazy binding saves its caller's vector registers so).
    if (event.kind == core::EventKind::kInstruction && SavesXState(code.data())) {
      for (const core::MemoryAccess& w : event.writes) {
        live.Write(w.address, w.data.data(), w.data.size());
      }
    }
    CompareRegisters(live, replay, k, k % 16 == 0);
    if (HasFatalFailure()) return;
    if (k % 20000 == 0) CompareMemory(live, replay, k);
    if (HasFatalFailure()) return;
  }
  EXPECT_EQ(k, result->instructions + result->signals);
  EXPECT_GT(reads_checked, 1000u);  // libc start-up alone loads more
  std::remove(trace.c_str());
}

// Every program in its four builds; in the sanitizer build (where this test
// is among the slowest and only slow: 15-65 s a case) two of them, which
// together still cover -O0/-O2 and static/PIE, as emu_crosscheck_test.cc's
// cross-check does everywhere.
std::vector<std::string> Programs() {
  std::vector<std::string> out;
  for (const char* p : {"loop", "strings", "syscalls", "scenario", "readlate", "signals"}) {
#ifdef BACKSTEP_SANITIZED_BUILD
    for (const char* build : {"O0_pie", "O2_static"}) out.push_back(std::string(p) + "_" + build);
#else
    for (const char* o : {"O0", "O2"}) {
      for (const char* l : {"static", "pie"}) out.push_back(std::string(p) + "_" + o + "_" + l);
    }
#endif
  }
  return out;
}

INSTANTIATE_TEST_SUITE_P(Programs, RecordReplay, ::testing::ValuesIn(Programs()),
                         [](const auto& p) { return p.param; });

}  // namespace
}  // namespace backstep::record
