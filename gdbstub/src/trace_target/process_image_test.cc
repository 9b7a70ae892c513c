// RecordedAuxv / RecordedExecutablePath on a usercorn trace whose initial
// stack is built by hand (fake trace -> UsercornWriter, as `backstep record`
// writes them), and SynthesizeAuxv checked against the kernel's own auxv of
// this very test binary (getauxval).
#include "backstep/gdbstub/process_image.h"

#include <gtest/gtest.h>
#include <sys/auxv.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <string>

#include "backstep/core/format_registry.h"
#include "backstep/core/trace_writer.h"
#include "backstep/testing/fake_trace.h"
#include "trace_target/trace_target_test_util.h"

namespace backstep::gdbstub {
namespace {

namespace ct = core::testing;

constexpr core::Address kStack = 0x7ffffffde000, kSp = 0x7fffffffe000;
constexpr core::Address kExecFn = 0x7fffffffef00;
const char kExe[] = "/work/bin/prog";

void PutU64(ct::FakeImageRegion& region, core::Address at, std::uint64_t value) {
  std::memcpy(region.bytes.data() + (at - region.start), &value, 8);
}

std::vector<std::uint8_t> Pairs(std::initializer_list<std::pair<std::uint64_t, std::uint64_t>> l) {
  std::vector<std::uint8_t> out;
  for (auto [type, value] : l) {
    out.insert(out.end(), reinterpret_cast<std::uint8_t*>(&type),
               reinterpret_cast<std::uint8_t*>(&type) + 8);
    out.insert(out.end(), reinterpret_cast<std::uint8_t*>(&value),
               reinterpret_cast<std::uint8_t*>(&value) + 8);
  }
  return out;
}

const std::vector<std::uint8_t> kAuxv = Pairs({{kAtPhdr, 0x400040},
                                               {kAtPagesz, 4096},
                                               {kAtEntry, 0x401000},
                                               {kAtExecfn, kExecFn},
                                               {kAtNull, 0}});

class ProcessImageTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char name[] = "/tmp/backstep-auxv-XXXXXX";
    dir_ = mkdtemp(name);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  // A usercorn trace (one instruction) whose stack at position 0 holds
  // argc = 1, argv[0], NULL, one envp entry, NULL, kAuxv. With `stack_end`
  // the mapping stops there: the bytes after it are unknown (usercorn
  // knows every byte of a mapping).
  std::shared_ptr<core::Trace> Recording(core::Address stack_end = 0) {
    ct::FakeTrace fake;
    core::RegisterFile regs(core::X86_64());
    // A usercorn keyframe gives every register a value: the source knows
    // them all (the writer refuses an unknown one).
    const std::vector<std::uint8_t> zeros(64, 0);
    for (core::RegisterId id = 0; id < core::X86_64().register_count(); ++id) {
      const auto& info = core::X86_64().info(id);
      if (!info.derived) regs.Set(id, std::span(zeros).first(info.size));
    }
    regs.SetU64(core::X86_64().sp(), kSp);
    regs.SetU64(core::X86_64().pc(), 0x401000);
    fake.initial_registers.emplace_back(core::ThreadId(1), regs);
    ct::FakeImageRegion stack;
    stack.start = kStack;
    stack.bytes.assign(0x21000, 0);
    stack.known.assign(0x21000, 1);
    core::Address at = kSp;
    for (std::uint64_t word : std::initializer_list<std::uint64_t>{1, kExecFn, 0, kExecFn, 0}) {
      PutU64(stack, at, word);
      at += 8;
    }
    std::memcpy(stack.bytes.data() + (at - kStack), kAuxv.data(), kAuxv.size());
    std::memcpy(stack.bytes.data() + (kExecFn - kStack), kExe, sizeof kExe);
    if (stack_end != 0) {
      stack.bytes.resize(stack_end - kStack);
      stack.known.resize(stack_end - kStack);
    }
    fake.image.push_back(stack);
    ct::FakeEvent step;
    step.thread = core::ThreadId(1);
    fake.events.push_back(step);

    std::string path = dir_ + "/trace.ucir";
    auto reader = ct::OpenFakeTrace(ct::FakeTraceSource(fake));
    if (!reader.ok()) return Failed(reader.status());
    auto writer = core::FindFormat("usercorn")->create_writer(path);
    if (!writer.ok()) return Failed(writer.status());
    auto written = core::ConvertTrace(**reader, **writer, path);
    if (!written.ok()) return Failed(written.status());
    auto trace = core::Trace::Open(path);
    if (!trace.ok()) return Failed(trace.status());
    return *trace;
  }

  static std::shared_ptr<core::Trace> Failed(const core::Status& status) {
    ADD_FAILURE() << status.ToString();
    return nullptr;
  }

  std::string dir_;
};

TEST_F(ProcessImageTest, ReadsTheAuxvAndExecFnOfARecording) {
  auto trace = Recording();
  ASSERT_NE(trace, nullptr);
  ASSERT_EQ(trace->header().format, "usercorn");
  auto auxv = RecordedAuxv(*trace);
  ASSERT_TRUE(auxv.ok()) << auxv.status().ToString();
  EXPECT_EQ(*auxv, kAuxv);
  EXPECT_EQ(AuxvValue(*auxv, kAtEntry), 0x401000u);
  EXPECT_EQ(AuxvValue(*auxv, kAtBase), std::nullopt);
  EXPECT_EQ(RecordedExecutablePath(*trace, *auxv), kExe);
}

TEST_F(ProcessImageTest, AnAuxvCutByTheEndOfTheStackIsNone) {
  // argc..envp are 5 words; the third auxv pair's value (AT_ENTRY).
  core::Address entry_value = kSp + 5 * 8 + 2 * 16 + 8;
  auto trace = Recording(entry_value + 4);
  ASSERT_NE(trace, nullptr);
  auto auxv = RecordedAuxv(*trace);
  EXPECT_EQ(auxv.status().code(), core::StatusCode::kNotFound);
  EXPECT_NE(auxv.status().message().find("not fully known"), std::string::npos)
      << auxv.status().ToString();
}

TEST_F(ProcessImageTest, AnUnmappedStackMeansNoAuxv) {
  auto trace = Recording(kSp);
  ASSERT_NE(trace, nullptr);
  auto auxv = RecordedAuxv(*trace);
  EXPECT_EQ(auxv.status().code(), core::StatusCode::kNotFound);
}

TEST(ProcessImage, TracesThatDoNotStartAtAnExecHaveNone) {
  const auto& reven = testing::SharedReven();
  ASSERT_NE(reven.trace, nullptr);
  auto auxv = RecordedAuxv(*reven.trace);
  EXPECT_EQ(auxv.status().code(), core::StatusCode::kNotFound);
  EXPECT_EQ(RecordedExecutablePath(*reven.trace, {}), "");
}

TEST(ProcessImage, SynthesizedAuxvMatchesTheKernelsForThisBinary) {
  const auto& reven = testing::SharedReven();
  ASSERT_NE(reven.trace, nullptr);
  auto auxv = SynthesizeAuxv(*reven.trace, "/proc/self/exe");
  ASSERT_TRUE(auxv.ok()) << auxv.status().ToString();
  EXPECT_EQ(AuxvValue(*auxv, kAtPhnum), getauxval(AT_PHNUM));
  EXPECT_EQ(AuxvValue(*auxv, kAtPhent), getauxval(AT_PHENT));
  EXPECT_EQ(AuxvValue(*auxv, kAtPagesz), 4096u);
  // No mapping of this binary in the trace: a PIE stays at bias 0, so only
  // the distance between the headers and the entry point is comparable.
  ASSERT_TRUE(AuxvValue(*auxv, kAtPhdr) && AuxvValue(*auxv, kAtEntry));
  EXPECT_EQ(*AuxvValue(*auxv, kAtEntry) - *AuxvValue(*auxv, kAtPhdr),
            getauxval(AT_ENTRY) - getauxval(AT_PHDR));
  EXPECT_EQ(auxv->size() % 16, 0u);
  EXPECT_EQ(AuxvValue(*auxv, kAtNull), 0u);
}

TEST(ProcessImage, SynthesizeNamesTheFileAndTheField) {
  const auto& reven = testing::SharedReven();
  ASSERT_NE(reven.trace, nullptr);
  auto missing = SynthesizeAuxv(*reven.trace, "/nonexistent/prog");
  EXPECT_NE(missing.status().message().find("/nonexistent/prog"), std::string::npos);
  char name[] = "/tmp/backstep-notelf-XXXXXX";
  int fd = mkstemp(name);
  ASSERT_GE(fd, 0);
  std::string text(64, 'x');
  ASSERT_EQ(write(fd, text.data(), text.size()), 64);
  close(fd);
  auto not_elf = SynthesizeAuxv(*reven.trace, name);
  EXPECT_NE(not_elf.status().message().find("e_ident"), std::string::npos)
      << not_elf.status().ToString();
  unlink(name);
}

}  // namespace
}  // namespace backstep::gdbstub
