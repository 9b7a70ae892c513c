// The generic writer (`backstep convert --to tfile`): each event becomes a
// frame with the thread's full registers and the event's memory writes.
#include "formats/tfile/tfile_trace_writer.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <map>

#include "backstep/core/format_registry.h"
#include "formats/tfile/tfile_reader.h"

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

TEST(TfileTraceWriterTest, EventsBecomeFrames) {
  const std::string path = TempPath("convert.tf");
  auto writer = FindFormat("tfile")->create_writer(path);
  ASSERT_TRUE(writer.ok());
  TraceHeader header;
  header.format = "fake";
  header.arch = &X86_64();
  RegisterFile initial(X86_64());
  initial.SetU64(Id("rip"), 0x1000);
  initial.SetU64(Id("rsp"), 0x8000);
  initial.SetU64(Id("cr3"), 0x5000);  // not in gdb's set: dropped
  ASSERT_TRUE((*writer)->Begin(header, {{ThreadId(1), initial}}, {}).ok());

  const std::uint8_t one[4] = {1, 1, 1, 1}, two[2] = {2, 2};
  Event e;
  e.thread = ThreadId(1);
  e.registers = {Write("rip", 4, RegisterOp::kAdd), Write("rax", 0x77)};
  e.writes = {{0x9000, one}, {0x9001, two}};  // overlapping: the second wins
  ASSERT_TRUE((*writer)->Append(e).ok());
  e.Clear();
  e.thread = ThreadId(7);  // a new thread: starts unknown
  e.registers = {Write("rip", 0x2000)};
  ASSERT_TRUE((*writer)->Append(e).ok());
  e.Clear();
  e.thread = ThreadId(1);
  e.flags = kEventClearsRegisters;
  e.registers = {Write("rbx", 5)};
  ASSERT_TRUE((*writer)->Append(e).ok());
  ASSERT_TRUE((*writer)->Finish().ok());

  auto opened = OpenTraceFile(path);
  ASSERT_TRUE(opened.ok()) << opened.status().ToString();
  auto* reader = dynamic_cast<TfileReader*>(opened->get());
  ASSERT_NE(reader, nullptr);
  EXPECT_EQ(reader->frame_count(), 3u);
  EXPECT_EQ(reader->header().declared_events, 3u);
  ASSERT_EQ(reader->tracepoints().size(), 1u);
  EXPECT_EQ(reader->tracepoints()[0].number, 1u);
  EXPECT_EQ(reader->layout().block_size(), X86_64().GdbBlockSize(kDefaultX86_64Features));

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
  EXPECT_EQ(regs[0].u64(Id("rip")), 0x1004u);
  EXPECT_EQ(regs[0].u64(Id("rsp")), 0x8000u);
  EXPECT_EQ(regs[0].u64(Id("rax")), 0x77u);
  EXPECT_TRUE(regs[0].known(Id("rbx")));  // unknown when written: zero
  EXPECT_FALSE(regs[0].known(Id("cr3")));
  EXPECT_EQ(memory[0],
            (std::map<Address, std::uint8_t>{{0x9000, 1}, {0x9001, 2}, {0x9002, 2}, {0x9003, 1}}));
  EXPECT_EQ(regs[1].u64(Id("rip")), 0x2000u);
  EXPECT_TRUE(memory[1].empty());
  EXPECT_EQ(regs[2].u64(Id("rbx")), 5u);
  EXPECT_EQ(regs[2].u64(Id("rip")), 0u);  // cleared, then written as zero
}

TEST(TfileTraceWriterTest, OtherArchitecturesAreUnsupported) {
  TfileTraceWriter writer(TempPath("none.tf"));
  TraceHeader header;
  EXPECT_EQ(writer.Begin(header, {}, {}).code(), StatusCode::kUnsupported);
}

}  // namespace
}  // namespace backstep::core
