// Unit tests of the recorder's pieces: decoding writes, x87 tags, refusals.
#include "recorder/recorder.h"

#include <gtest/gtest.h>
#include <sys/user.h>

#include <cstdint>
#include <fstream>
#include <vector>

#include "recorder/cpu_state.h"
#include "recorder/insn_decoder.h"

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

}  // namespace
}  // namespace backstep::record
