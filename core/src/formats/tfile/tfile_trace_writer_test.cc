// The generic writer (`backstep convert --to tfile`): each snapshot becomes a
// frame with its registers (unknown ones stay unavailable) and memory, and
// what a tfile cannot hold is refused in one line.
#include "formats/tfile/tfile_trace_writer.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <map>

#include "backstep/core/format_registry.h"
#include "backstep/testing/tfile_fixtures.h"
#include "formats/tfile/tfile_reader.h"
#include "util/hex.h"

namespace backstep::core {
namespace {

RegisterId Id(std::string_view name) { return *X86_64().Find(name); }

RegisterWrite Write(std::string_view name, std::uint64_t v, RegisterOp op = RegisterOp::kSet) {
  RegisterWrite w;
  w.reg = Id(name);
  w.op = op;
  for (int i = 0; i < 8; ++i) w.value[i] = static_cast<std::uint8_t>(v >> (8 * i));
  return w;
}

std::string TempPath(const std::string& name) {
  const std::string dir = ::testing::TempDir() + "/tfile_trace_writer_test";
  std::filesystem::create_directories(dir);
  return dir + "/" + name;
}

// Every register of gdb's core and sse features, as one frame's writes.
std::vector<RegisterWrite> CoreAndSse() {
  std::vector<RegisterWrite> out;
  for (const GdbSlot& slot : X86_64().GdbLayout(kFeatureCore | kFeatureSse)) {
    if (X86_64().info(slot.reg).derived) continue;
    RegisterWrite w;
    w.reg = slot.reg;
    w.value[0] = static_cast<std::uint8_t>(slot.reg + 1);
    out.push_back(w);
  }
  for (int i = 0; i < 8; ++i) {  // st0..st7's storage
    RegisterWrite w;
    w.reg = Id("fpr" + std::to_string(i));
    w.value[0] = static_cast<std::uint8_t>(i + 1);
    out.push_back(w);
  }
  return out;
}

TEST(TfileTraceWriterTest, SnapshotsBecomeFramesAndUnknownStaysUnknown) {
  const std::string path = TempPath("convert.tf");
  auto writer = FindFormat("tfile")->create_writer(path);
  ASSERT_TRUE(writer.ok());
  TraceHeader header;
  header.format = "fake";
  header.arch = &X86_64();
  ASSERT_TRUE((*writer)->Begin(header, {{ThreadId(1), RegisterFile(X86_64())}}, {}).ok());

  const std::uint8_t one[4] = {1, 1, 1, 1}, two[2] = {2, 2};
  Event e;
  e.thread = ThreadId(1);
  e.kind = EventKind::kFrame;
  e.flags = kEventClearsRegisters | kEventClearsMemory;
  e.registers = CoreAndSse();
  e.writes = {{0x9000, one}, {0x9001, two}};  // overlapping: the second wins
  ASSERT_TRUE((*writer)->Append(e).ok());
  e.registers.clear();  // a frame without registers: none invented, no pc guessed
  e.writes = {{0x9100, two}};
  ASSERT_TRUE((*writer)->Append(e).ok());
  e.registers = CoreAndSse();
  e.writes.clear();
  ASSERT_TRUE((*writer)->Append(e).ok());
  ASSERT_TRUE((*writer)->Finish().ok());

  auto opened = OpenTraceFile(path);
  ASSERT_TRUE(opened.ok()) << opened.status().ToString();
  auto* reader = dynamic_cast<TfileReader*>(opened->get());
  ASSERT_NE(reader, nullptr);
  EXPECT_EQ(reader->frame_count(), 3u);
  // The R block is the known registers' layout: fiseg, orig_rax, fs_base,
  // ymm0h... are past it, unavailable (they used to read back as 0).
  EXPECT_EQ(reader->layout().block_size(), X86_64().GdbBlockSize(kFeatureCore | kFeatureSse));

  std::vector<RegisterFile> regs;
  std::vector<std::map<Address, std::uint8_t>> memory;
  Event back;
  while (*reader->Next(&back)) {
    EXPECT_EQ(back.thread, ThreadId(1));
    RegisterFile& f = regs.emplace_back(X86_64());
    for (const RegisterWrite& w : back.registers) f.Apply(w);
    auto& m = memory.emplace_back();
    for (const MemoryAccess& a : back.writes) {
      for (std::size_t i = 0; i < a.data.size(); ++i) m[a.address + i] = a.data[i];
    }
  }
  ASSERT_EQ(regs.size(), 3u);
  RegisterFile want(X86_64());
  for (const RegisterWrite& w : CoreAndSse()) want.Apply(w);
  for (RegisterId id = 0; id < X86_64().register_count(); ++id) {
    if (X86_64().info(id).derived) continue;
    EXPECT_EQ(regs[0].known(id), want.known(id)) << X86_64().info(id).name;
    if (want.known(id)) {
      EXPECT_TRUE(std::ranges::equal(regs[0].bytes(id), want.bytes(id))) << X86_64().info(id).name;
    }
  }
  EXPECT_FALSE(regs[0].known(Id("orig_rax")));
  EXPECT_EQ(memory[0],
            (std::map<Address, std::uint8_t>{{0x9000, 1}, {0x9001, 2}, {0x9002, 2}, {0x9003, 1}}));
  EXPECT_EQ(regs[1], RegisterFile(X86_64()));
  EXPECT_EQ(memory[1], (std::map<Address, std::uint8_t>{{0x9100, 2}, {0x9101, 2}}));
  EXPECT_EQ(regs[2], want);
}

// Begin() then one Append() of `e`: the first refusal's message.
std::string Refusal(const std::vector<std::pair<ThreadId, RegisterFile>>& initial,
                    std::vector<Event> events) {
  TfileTraceWriter writer(TempPath("refused.tf"));
  TraceHeader header;
  header.arch = &X86_64();
  Status s = writer.Begin(header, initial, {});
  for (const Event& e : events) {
    if (!s.ok()) break;
    s = writer.Append(e);
  }
  EXPECT_EQ(s.code(), StatusCode::kUnsupported) << s.ToString();
  return s.message();
}

TEST(TfileTraceWriterTest, WhatATfileCannotHoldIsRefusedInOneLine) {
  const std::string out = TempPath("refused.tf");
  RegisterFile initial(X86_64());
  initial.SetU64(Id("rip"), 0x1000);
  EXPECT_EQ(Refusal({{ThreadId(1), initial}}, {}),
            out +
                ": a tfile holds no state before its first frame, and the source knows "
                "registers at position 0");
  Event e;
  e.thread = ThreadId(1);
  const std::uint8_t one[1] = {1};
  e.writes = {{0x9000, one}};
  EXPECT_EQ(Refusal({}, {e, e}), out +
                                     ": event 1: it keeps memory of earlier events, and a "
                                     "tfile frame holds only what it collected");
  e.writes.clear();
  e.registers = {Write("rax", 1), Write("rip", 0x1000)};  // rbx unknown between them
  EXPECT_EQ(Refusal({}, {e}),
            out +
                ": event 0: register rip is known but an earlier one of the R block is not; a "
                "tfile frame's registers are all of its R block or none");
  e.registers.clear();
  e.thread = ThreadId(7);
  EXPECT_EQ(Refusal({}, {e}), out +
                                  ": event 0: a tfile frame has no thread (it reads back as "
                                  "thread 1), and this event is thread 7's");
}

// Each frame's state as TfileReader gives it: description, registers,
// memory (every frame clears both).
std::vector<std::string> Frames(TraceReader& reader) {
  std::vector<std::string> out;
  Event e;
  while (true) {
    auto more = reader.Next(&e);
    EXPECT_TRUE(more.ok()) << more.status().ToString();
    if (!more.ok() || !*more) break;
    RegisterFile regs(X86_64());
    for (const RegisterWrite& w : e.registers) regs.Apply(w);
    std::string line = std::string(e.description) + ":";
    for (RegisterId id = 0; id < X86_64().register_count(); ++id) {
      if (!X86_64().info(id).derived && regs.known(id)) {
        line += " " + std::string(X86_64().info(id).name) + "=" + HexBytes(regs.bytes(id));
      }
    }
    std::map<Address, std::uint8_t> memory;
    for (auto w = e.writes.rbegin(); w != e.writes.rend(); ++w) {  // the first block wins
      for (std::size_t i = 0; i < w->data.size(); ++i) memory[w->address + i] = w->data[i];
    }
    for (const auto& [address, byte] : memory) line += " " + HexU64(address) + ":" + HexU64(byte);
    out.push_back(line);
  }
  return out;
}

// gdb's own files convert with every frame's tracepoint, registers (the R
// block's prefix of an AVX-512 layout, the pc guessed for V-only frames),
// memory and variables (they used to be refused: "its frame knows other
// registers than the first one's").
TEST(TfileTraceWriterTest, GdbSamplesConvertFrameForFrame) {
  for (const std::string name : {"work_amd64.tf", "stepping_amd64.tf"}) {
    SCOPED_TRACE(name);
    const std::string sample = testing::SamplesDir() + "/gdb_tfile/" + name;
    auto source = OpenTraceFile(sample);
    ASSERT_TRUE(source.ok()) << source.status().ToString();
    const std::string path = TempPath("gdb_" + name);
    auto writer = FindFormat("tfile")->create_writer(path);
    ASSERT_TRUE(writer.ok());
    auto n = ConvertTrace(**source, **writer, path);
    ASSERT_TRUE(n.ok()) << n.status().ToString();
    auto again = OpenTraceFile(sample);
    auto converted = OpenTraceFile(path);
    ASSERT_TRUE(again.ok() && converted.ok());
    const std::vector<std::string> want = Frames(**again);
    EXPECT_FALSE(want.empty());
    EXPECT_EQ(Frames(**converted), want);
  }
}

TEST(TfileTraceWriterTest, OtherArchitecturesAreUnsupported) {
  TfileTraceWriter writer(TempPath("none.tf"));
  TraceHeader header;
  EXPECT_EQ(writer.Begin(header, {}, {}).code(), StatusCode::kUnsupported);
}

}  // namespace
}  // namespace backstep::core
