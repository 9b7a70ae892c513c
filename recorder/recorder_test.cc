// Unit tests of the recorder's pieces: decoding writes, x87 tags, refusals.
#include "recorder/recorder.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/user.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "backstep/core/byte_source.h"
#include "backstep/core/format_registry.h"
#include "recorder/cpu_state.h"
#include "recorder/insn_decoder.h"
#include "recorder/record_output_test_util.h"
#include "recorder/usercorn_sink.h"

namespace backstep::record {
namespace {

std::vector<Range> WritesOf(std::vector<std::uint8_t> bytes, const user_regs_struct& before,
                            const user_regs_struct& after) {
  InsnDecoder decoder;
  const Decoded& d = decoder.Decode(0x1000, bytes);
  std::vector<Range> out;
  InsnDecoder::Writes(d, before, after, &out);
  return out;
}

TEST(InsnDecoder, ExplicitStoreWithRipAndFsBase) {
  user_regs_struct r{};
  r.rax = 0x5000;
  r.fs_base = 0x7000;
  // mov [rax+8], ecx
  auto w = WritesOf({0x89, 0x48, 0x08}, r, r);
  ASSERT_EQ(w.size(), 1u);
  EXPECT_EQ(w[0].start, 0x5008u);
  EXPECT_EQ(w[0].size, 4u);
  // mov fs:[0x28], rax
  w = WritesOf({0x64, 0x48, 0x89, 0x04, 0x25, 0x28, 0, 0, 0}, r, r);
  ASSERT_EQ(w.size(), 1u);
  EXPECT_EQ(w[0].start, 0x7028u);
  // mov [rip+0x10], al: relative to the next instruction (0x1006)
  w = WritesOf({0x88, 0x05, 0x10, 0, 0, 0}, r, r);
  ASSERT_EQ(w.size(), 1u);
  EXPECT_EQ(w[0].start, 0x1016u);
  // a load writes nothing
  EXPECT_TRUE(WritesOf({0x8b, 0x48, 0x08}, r, r).empty());
}

TEST(InsnDecoder, PushCallAndStrings) {
  user_regs_struct before{}, after{};
  before.rsp = 0x8000;
  after.rsp = 0x7ff8;
  auto w = WritesOf({0x50}, before, after);  // push rax
  ASSERT_EQ(w.size(), 1u);
  EXPECT_EQ(w[0].start, 0x7ff8u);
  EXPECT_EQ(w[0].size, 8u);
  before = after = {};
  before.rdi = 0x9000;
  after.rdi = 0x9040;
  w = WritesOf({0xf3, 0x48, 0xab}, before, after);  // rep stosq, 8 iterations
  ASSERT_EQ(w.size(), 1u);
  EXPECT_EQ(w[0].start, 0x9000u);
  EXPECT_EQ(w[0].size, 0x40u);
  after.rdi = 0x8fff;  // std; stosb
  w = WritesOf({0xaa}, before, after);
  ASSERT_EQ(w.size(), 1u);
  EXPECT_EQ(w[0].start, 0x9000u);
  EXPECT_EQ(w[0].size, 1u);
}

TEST(InsnDecoder, VectorStoresAreFpAndSized) {
  user_regs_struct r{};
  r.rdi = 0x4000;
  InsnDecoder decoder;
  // vmovdqu [rdi], ymm0
  const Decoded& d = decoder.Decode(0x1000, std::vector<std::uint8_t>{0xc5, 0xfe, 0x7f, 0x07});
  EXPECT_TRUE(d.fp);
  std::vector<Range> w;
  InsnDecoder::Writes(d, r, r, &w);
  ASSERT_EQ(w.size(), 1u);
  EXPECT_EQ(w[0].size, 32u);
  // fxsave [rdi]
  const Decoded& f = decoder.Decode(0x2000, std::vector<std::uint8_t>{0x0f, 0xae, 0x07});
  w.clear();
  InsnDecoder::Writes(f, r, r, &w);
  ASSERT_EQ(w.size(), 1u);
  EXPECT_EQ(w[0].size, 512u);
}

std::vector<Range> ReadsOf(std::vector<std::uint8_t> bytes, const user_regs_struct& before,
                           const user_regs_struct& after) {
  InsnDecoder decoder;
  const Decoded& d = decoder.Decode(0x1000, bytes);
  std::vector<Range> out;
  InsnDecoder::Reads(d, before, after, &out);
  return out;
}

TEST(InsnDecoder, ReadsOfLoadsRmwAndStores) {
  user_regs_struct r{};
  r.rax = 0x5000;
  r.rdi = 0x4000;
  // mov ecx, [rax+8]: a 4-byte load
  auto rd = ReadsOf({0x8b, 0x48, 0x08}, r, r);
  ASSERT_EQ(rd.size(), 1u);
  EXPECT_EQ(rd[0].start, 0x5008u);
  EXPECT_EQ(rd[0].size, 4u);
  // add [rax+8], ecx: read-modify-write reads
  rd = ReadsOf({0x01, 0x48, 0x08}, r, r);
  ASSERT_EQ(rd.size(), 1u);
  EXPECT_EQ(rd[0].start, 0x5008u);
  // mov [rax+8], ecx and vmovdqu [rdi], ymm0 (capstone 4 says "read"): stores only
  EXPECT_TRUE(ReadsOf({0x89, 0x48, 0x08}, r, r).empty());
  EXPECT_TRUE(ReadsOf({0xc5, 0xfe, 0x7f, 0x07}, r, r).empty());
  // vmovdqu ymm0, [rdi]: a 32-byte load
  rd = ReadsOf({0xc5, 0xfe, 0x6f, 0x07}, r, r);
  ASSERT_EQ(rd.size(), 1u);
  EXPECT_EQ(rd[0].size, 32u);
  // lea and nop with a memory operand read nothing
  EXPECT_TRUE(ReadsOf({0x48, 0x8d, 0x48, 0x08}, r, r).empty());
  EXPECT_TRUE(ReadsOf({0x0f, 0x1f, 0x40, 0x00}, r, r).empty());
  // cmp qword [rax], 0 reads
  EXPECT_EQ(ReadsOf({0x48, 0x83, 0x38, 0x00}, r, r).size(), 1u);
}

TEST(InsnDecoder, ImplicitStackAndStringReads) {
  user_regs_struct before{}, after{};
  before.rsp = 0x8000;
  before.rbp = 0x9000;
  after.rsp = 0x8008;
  for (std::vector<std::uint8_t> insn : {std::vector<std::uint8_t>{0x58},     // pop rax
                                         std::vector<std::uint8_t>{0xc3},     // ret
                                         std::vector<std::uint8_t>{0x9d}}) {  // popf
    auto rd = ReadsOf(insn, before, after);
    ASSERT_EQ(rd.size(), 1u);
    EXPECT_EQ(rd[0].start, 0x8000u);
    EXPECT_EQ(rd[0].size, 8u);
  }
  auto rd = ReadsOf({0xc9}, before, after);  // leave: [rbp]
  ASSERT_EQ(rd.size(), 1u);
  EXPECT_EQ(rd[0].start, 0x9000u);
  // push [rax]: reads its operand (and writes the stack)
  before.rax = 0x6000;
  rd = ReadsOf({0xff, 0x30}, before, after);
  ASSERT_EQ(rd.size(), 1u);
  EXPECT_EQ(rd[0].start, 0x6000u);
  // rep movsq, 4 iterations: reads [rsi, +32)
  before = after = {};
  before.rsi = 0x3000;
  after.rsi = 0x3020;
  before.rdi = 0x5000;
  after.rdi = 0x5020;
  rd = ReadsOf({0xf3, 0x48, 0xa5}, before, after);
  ASSERT_EQ(rd.size(), 1u);
  EXPECT_EQ(rd[0].start, 0x3000u);
  EXPECT_EQ(rd[0].size, 0x20u);
  // repe cmpsb, 3 iterations: both strings
  after.rsi = 0x3003;
  after.rdi = 0x5003;
  rd = ReadsOf({0xf3, 0xa6}, before, after);
  ASSERT_EQ(rd.size(), 2u);
  EXPECT_EQ(rd[0].size, 3u);
  EXPECT_EQ(rd[1].start, 0x5000u);
  // scasb backwards (std), one iteration: [rdi before]
  after.rdi = 0x4fff;
  rd = ReadsOf({0xae}, before, after);
  ASSERT_EQ(rd.size(), 1u);
  EXPECT_EQ(rd[0].start, 0x5000u);
  EXPECT_EQ(rd[0].size, 1u);
}

TEST(CpuState, FullTagWord) {
  std::uint8_t st[128] = {};
  // ST(0) = 1.0 (valid), TOP = 7, so it is physical register 7; others empty.
  st[7] = 0x80;
  st[8] = 0xff;
  st[9] = 0x3f;
  EXPECT_EQ(FullTagWord(0x80, 7 << 11, st), 0x3fff);
  // ST(0) = +0.0: tag "zero".
  std::uint8_t zero[128] = {};
  EXPECT_EQ(FullTagWord(0x80, 7 << 11, zero), 0x7fff);
}

TEST(Record, RefusesMissingAndNonX86Programs) {
  struct NullSink : RecordingSink {
    core::Status OnStart(const StartInfo&) override { return core::Status::Ok(); }
    void OnInstruction(const InstructionRecord&) override {}
    void OnSyscall(const SyscallRecord&) override {}
    core::Status Finish(bool) override { return core::Status::Ok(); }
  } sink;
  RecordOptions options;
  options.spawn.argv = {"/nonexistent/program"};
  auto r = Record(options, sink);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), core::StatusCode::kNotFound);
  const std::string script = ::testing::TempDir() + "/script.sh";
  std::ofstream(script) << "#!/bin/sh\necho hi\n";
  options.spawn.argv = {script};
  r = Record(options, sink);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), core::StatusCode::kUnsupported);
  EXPECT_NE(r.status().message().find("not an ELF"), std::string::npos);
}

TEST(Record, MaxInstructionsStopsCleanly) {
  struct CountSink : RecordingSink {
    core::Status OnStart(const StartInfo& s) override {
      started = !s.auxv.empty() && !s.executable.empty() && !s.mappings.empty();
      return core::Status::Ok();
    }
    void OnInstruction(const InstructionRecord&) override { ++instructions; }
    void OnSyscall(const SyscallRecord&) override {}
    core::Status Finish(bool e) override {
      finished = true;
      exited = e;
      return core::Status::Ok();
    }
    bool started = false, finished = false, exited = true;
    std::uint64_t instructions = 0;
  } sink;
  RecordOptions options;
  options.spawn.argv = {"/bin/true"};
  options.max_instructions = 1000;
  auto r = Record(options, sink);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->end, RecordResult::End::kMaxInstructions);
  EXPECT_EQ(sink.instructions, 1000u);
  EXPECT_TRUE(sink.started);
  EXPECT_TRUE(sink.finished);
  EXPECT_FALSE(sink.exited);
}

// Address of a global of a test program (nm; PIEs load at 0x555555554000
// with ASLR off, as the recorder runs them).
core::Address SymbolAddress(const std::string& program, const std::string& name) {
  const std::string command = "nm " + program;
  FILE* nm = popen(command.c_str(), "r");
  if (!nm) return 0;
  char line[512];
  core::Address address = 0;
  while (std::fgets(line, sizeof line, nm)) {
    unsigned long long a = 0;
    char type = 0;
    char symbol[256] = {};
    if (std::sscanf(line, "%llx %c %255s", &a, &type, symbol) == 3 && name == symbol) address = a;
  }
  pclose(nm);
  const bool pie = program.find("_pie") != std::string::npos;
  return address + (pie ? 0x555555554000ull : 0);
}

// Records a producer/consumer program (tests/programs/threads.c) and reads
// the trace back: two threads, each with its own events; the new thread
// starts with its whole register state; the racy counter's writes replayed
// in trace order give what the program printed; the periodic full diffs of
// writable memory found nothing the recorder missed.
TEST(RecordThreads, ProducerConsumer) {
  for (const char* variant : {"threads_O0_static", "threads_O2_pie"}) {
    SCOPED_TRACE(variant);
    const std::string program = std::string(BACKSTEP_RECORD_PROGRAMS) + "/" + variant;
    const std::string trace = ::testing::TempDir() + "/" + variant + ".ucir";
    const std::string out = ::testing::TempDir() + "/" + variant + ".out";
    auto sink = UsercornSink::Create(trace, true);
    ASSERT_TRUE(sink.ok()) << sink.status().message();
    RecordOptions options;
    options.spawn.argv = {program};
    options.check_interval = 3000;
    auto r = test_util::RecordPrintingTo(options, **sink, out);
    ASSERT_TRUE(r.ok()) << r.status().message();
    EXPECT_EQ(r->end, RecordResult::End::kExited);
    EXPECT_EQ(r->exit_code, 0);
    EXPECT_EQ(r->missed_bytes, 0u);
    EXPECT_EQ(r->missed_registers, 0u);
    std::string printed;
    std::getline(std::ifstream(out), printed);
    EXPECT_EQ(printed, "sum 210 counter 20020");

    const core::Address counter = SymbolAddress(program, "counter");
    ASSERT_NE(counter, 0u);
    auto source = core::MapFile(trace);
    ASSERT_TRUE(source.ok());
    auto reader = core::OpenTraceSource(*source);
    ASSERT_TRUE(reader.ok()) << reader.status().message();
    EXPECT_TRUE((*reader)->header().records_reads);
    core::Event e;
    std::map<std::uint64_t, std::uint64_t> events;  // per thread
    std::set<std::uint64_t> counter_writers;
    std::uint64_t value = 0, first_of_2 = 0;
    std::uint8_t bytes[8] = {};
    for (std::uint64_t n = 0;; ++n) {
      auto more = (*reader)->Next(&e);
      ASSERT_TRUE(more.ok()) << more.status().message();
      if (!*more) break;
      if (events[e.thread.value]++ == 0 && e.thread.value == 2) first_of_2 = e.registers.size();
      for (const core::MemoryAccess& w : e.writes) {
        for (std::size_t i = 0; i < w.data.size(); ++i) {
          if (w.address + i >= counter && w.address + i < counter + 8) {
            bytes[w.address + i - counter] = w.data[i];
            counter_writers.insert(e.thread.value);
          }
        }
      }
    }
    std::memcpy(&value, bytes, 8);
    EXPECT_EQ(value, 20020u);
    EXPECT_EQ(events.size(), 2u);
    EXPECT_GT(events[1], 1000u);
    EXPECT_GT(events[2], 1000u);
    EXPECT_EQ(counter_writers, (std::set<std::uint64_t>{1, 2}));
    EXPECT_GE(first_of_2, 25u);  // GPRs, flags, selectors, bases (+ FP state)
    std::remove(trace.c_str());
  }
}

// Reads: the trace declares them, and the read of `secret` long after its
// write is there (tests/programs/readlate.c).
TEST(RecordReads, ReadOfAGlobalIsRecorded) {
  struct ReadSink : RecordingSink {
    core::Status OnStart(const StartInfo&) override { return core::Status::Ok(); }
    void OnInstruction(const InstructionRecord& insn) override {
      for (const core::MemoryAccess& r : insn.reads) {
        if (r.address == watched && r.data.size() == 8) {
          std::uint64_t v = 0;
          std::memcpy(&v, r.data.data(), 8);
          values.push_back(v);
        }
      }
      for (const core::MemoryAccess& w : insn.writes) {
        if (w.address == watched) ++writes;
      }
    }
    void OnSyscall(const SyscallRecord&) override {}
    core::Status Finish(bool) override { return core::Status::Ok(); }
    core::Address watched = 0;
    std::vector<std::uint64_t> values;
    int writes = 0;
  } sink;
  const std::string program = std::string(BACKSTEP_RECORD_PROGRAMS) + "/readlate_O0_static";
  sink.watched = SymbolAddress(program, "secret");
  ASSERT_NE(sink.watched, 0u);
  RecordOptions options;
  options.spawn.argv = {program};
  options.spawn.stdout_fd = open("/dev/null", O_WRONLY);
  options.read_values = true;
  auto r = Record(options, sink);
  close(options.spawn.stdout_fd);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(sink.writes, 1);
  EXPECT_EQ(sink.values, std::vector<std::uint64_t>{42});
  // --no-reads: none.
  sink.values.clear();
  options.reads = false;
  options.spawn.stdout_fd = open("/dev/null", O_WRONLY);
  r = Record(options, sink);
  close(options.spawn.stdout_fd);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_TRUE(sink.values.empty());
}

// fork and vfork (tests/programs/forks.c): following the parent records
// it to its end (the children run untraced); following the child records
// the fork child, whose write and exit status are in the trace.
TEST(RecordFork, FollowParentOrChild) {
  const std::string program = std::string(BACKSTEP_RECORD_PROGRAMS) + "/forks_O0_static";
  const core::Address marker = SymbolAddress(program, "marker");
  ASSERT_NE(marker, 0u);
  for (const bool child : {false, true}) {
    SCOPED_TRACE(child ? "child" : "parent");
    const std::string trace = ::testing::TempDir() + "/forks.ucir";
    const std::string out = ::testing::TempDir() + "/forks.out";
    auto sink = UsercornSink::Create(trace, true);
    ASSERT_TRUE(sink.ok()) << sink.status().message();
    RecordOptions options;
    options.spawn.argv = {program};
    options.check_interval = 2000;
    if (child) options.follow = RecordOptions::Follow::kChild;
    auto r = test_util::RecordPrintingTo(options, **sink, out);
    ASSERT_TRUE(r.ok()) << r.status().message();
    EXPECT_EQ(r->end, RecordResult::End::kExited);
    EXPECT_EQ(r->exit_code, child ? 3 : 0);
    EXPECT_EQ(r->missed_bytes, 0u);
    if (!child) {
      // The parent waited for both (untraced) children before printing.
      std::string printed;
      std::getline(std::ifstream(out), printed);
      EXPECT_EQ(printed, "fork 3 vfork 4 marker 0");
    }
    auto source = core::MapFile(trace);
    ASSERT_TRUE(source.ok());
    auto reader = core::OpenTraceSource(*source);
    ASSERT_TRUE(reader.ok()) << reader.status().message();
    core::Event e;
    std::uint64_t marker_value = 0;
    for (;;) {
      auto more = (*reader)->Next(&e);
      ASSERT_TRUE(more.ok()) << more.status().message();
      if (!*more) break;
      for (const core::MemoryAccess& w : e.writes) {
        if (w.address == marker && w.data.size() == 8) std::memcpy(&marker_value, w.data.data(), 8);
      }
    }
    EXPECT_EQ(marker_value, child ? 0x600du : 0u);
    std::remove(trace.c_str());
  }
}

// The side of a fork that is not followed runs as without the recorder
// (tests/programs/untraced.c): its rdtsc and cpuid do not fault (PR_SET_TSC
// and, with --cpuid portable, CPUID faulting are undone in it) and no
// single-step trap kills it. Its output is read from a pipe until every
// writer is gone (the untraced side may outlive the recording).
void RecordUntraced(bool portable_cpuid) {
  const std::string program = std::string(BACKSTEP_RECORD_PROGRAMS) + "/untraced_O0_static";
  for (const bool child : {false, true}) {
    SCOPED_TRACE(child ? "following the child" : "following the parent");
    const std::string trace = ::testing::TempDir() + "/untraced.ucir";
    auto sink = UsercornSink::Create(trace, true);
    ASSERT_TRUE(sink.ok()) << sink.status().message();
    int fds[2];
    ASSERT_EQ(pipe(fds), 0);
    RecordOptions options;
    options.spawn.argv = {program};
    options.spawn.stdout_fd = fds[1];
    options.portable_cpuid = portable_cpuid;
    if (child) options.follow = RecordOptions::Follow::kChild;
    auto r = Record(options, **sink);
    close(fds[1]);
    std::string printed;
    char buf[256];
    for (ssize_t n; (n = read(fds[0], buf, sizeof buf)) > 0;) printed.append(buf, n);
    close(fds[0]);
    ASSERT_TRUE(r.ok()) << r.status().message();
    EXPECT_EQ(r->end, RecordResult::End::kExited);
    EXPECT_EQ(r->exit_code, child ? 3 : 0);
    EXPECT_EQ(printed, "child 1\nparent 1\nchild status 3 signal 0\n");
    std::remove(trace.c_str());
  }
}

TEST(RecordFork, UntracedSideRunsAsWithoutTheRecorder) { RecordUntraced(false); }

// With CPUID faulting (cpuid_fault CPUs) it is undone in the untraced side;
// without, --cpuid portable is answered by the stepper and nothing leaks.
TEST(RecordFork, UntracedSideRunsAsWithoutTheRecorderPortableCpuid) { RecordUntraced(true); }

}  // namespace
}  // namespace backstep::record
