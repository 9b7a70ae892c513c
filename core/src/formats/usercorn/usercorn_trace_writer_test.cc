// UsercornTraceWriter (`backstep convert --to usercorn`): a random
// single-thread FakeTrace converted to usercorn must replay to the same
// states for every register usercorn carries and for memory, with the same
// positions; usercorn itself converts to the same events, a two-thread
// recording too; and what usercorn cannot express is Unsupported.
#include "formats/usercorn/usercorn_trace_writer.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <map>

#include "backstep/core/format_registry.h"
#include "backstep/testing/fake_trace.h"
#include "backstep/testing/fake_trace_generator.h"
#include "formats/usercorn/usercorn_test_util.h"
#include "testing/usercorn_fixtures.h"

namespace backstep::core {
namespace {

std::string TempPath(const std::string& name) {
  return (std::filesystem::temp_directory_path() /
          ("usercorn_tw_" + std::to_string(getpid()) + "_" + name))
      .string();
}

Status Convert(TraceReader& in, const std::string& path) {
  const FormatInfo* usercorn = FindFormat("usercorn");
  if (usercorn == nullptr || !usercorn->create_writer) return Status::NotFound("no writer");
  BACKSTEP_ASSIGN_OR_RETURN(auto writer, usercorn->create_writer(path));
  return ConvertTrace(in, *writer, path).status();
}

// Registers usercorn carries (alone, as the high half of YMMn or FIP/FDP,
// or as the top part of ZMMn), and rip.
bool Carried(RegisterId id) {
  static const std::vector<bool> top = [] {
    std::vector<bool> t(X86_64().register_count());
    for (std::uint16_t e = 0; e < 1024; ++e) {
      if (UsercornX86_64().FindTop(e) != kNoRegister) t[UsercornX86_64().FindTop(e)] = true;
    }
    return t;
  }();
  const UsercornArch& u = UsercornX86_64();
  return id == X86_64().pc() || u.UnicornOf(id) != kNoUnicornRegister ||
         u.WideOf(id) != kNoUnicornRegister || top[id];
}

void ExpectSameCarried(const RegisterFile& a, const RegisterFile& b, const std::string& where) {
  for (RegisterId id = 0; id < X86_64().register_count(); ++id) {
    if (!Carried(id) || !a.known(id)) continue;
    ASSERT_TRUE(b.known(id)) << where << " " << X86_64().info(id).name;
    ASSERT_EQ(HexBytes(a.bytes(id)), HexBytes(b.bytes(id)))
        << where << " " << X86_64().info(id).name;
  }
}

// Replays both readers from their current positions: same number of
// events, same carried registers and same memory after each.
void ExpectSameReplay(TraceReader& a, TraceReader& b) {
  RegisterFile ra = a.InitialRegisters().at(0).second;
  RegisterFile rb = b.InitialRegisters().at(0).second;
  ExpectSameCarried(ra, rb, "initial");
  std::map<Address, std::uint8_t> wa, wb;
  Event ea, eb;
  for (std::uint64_t n = 0;; ++n) {
    auto ma = a.Next(&ea);
    auto mb = b.Next(&eb);
    ASSERT_TRUE(ma.ok() && mb.ok()) << mb.status().ToString();
    ASSERT_EQ(*ma, *mb) << "event " << n;  // positions are kept
    if (!*ma) break;
    for (const RegisterWrite& w : ea.registers) ra.Apply(w);
    for (const RegisterWrite& w : eb.registers) rb.Apply(w);
    for (const auto& m : ea.writes) {
      for (std::size_t i = 0; i < m.data.size(); ++i) wa[m.address + i] = m.data[i];
    }
    for (const auto& m : eb.writes) {
      for (std::size_t i = 0; i < m.data.size(); ++i) wb[m.address + i] = m.data[i];
    }
    ExpectSameCarried(ra, rb, "after event " + std::to_string(n));
    if (n % 100 == 0) {
      ASSERT_EQ(wa, wb) << "after event " << n;
    }
  }
  EXPECT_EQ(wa, wb);
}

TEST(UsercornTraceWriterTest, ConvertedFakeTraceReplaysToTheSameStates) {
  for (std::uint64_t seed : {21, 22}) {
    testing::FakeTraceOptions o;
    o.seed = seed;
    o.events = 3000;
    testing::FakeTrace fake = testing::GenerateFakeTrace(o);
    // usercorn's keyframe gives every tracked register a value: the source
    // knows them (an unknown one is refused, WhatUsercornCannotExpress...).
    for (auto& [tid, regs] : fake.initial_registers) {
      for (RegisterId id : UsercornX86_64().tracked()) {
        if (!regs.known(id)) regs.SetU64(id, 0);
      }
    }
    auto source = testing::OpenFakeTrace(testing::FakeTraceSource(fake));
    ASSERT_TRUE(source.ok());
    const std::string path = TempPath("convert_" + std::to_string(seed) + ".ucir");
    Status s = Convert(**source, path);
    ASSERT_TRUE(s.ok()) << s.ToString();
    auto converted = OpenTraceFile(path);
    std::filesystem::remove(path);
    ASSERT_TRUE(converted.ok()) << converted.status().ToString();
    auto again = testing::OpenFakeTrace(testing::FakeTraceSource(fake));
    TraceReader& a = **again;
    TraceReader& b = **converted;
    EXPECT_EQ(b.header().format, "usercorn");
    ASSERT_EQ(b.header().regions.size(), a.header().regions.size());
    for (const MemoryRegion& r : a.header().regions) {
      std::vector<std::uint8_t> ma(r.size), ka(r.size), mb(r.size), kb(r.size);
      a.ReadInitialMemory(r.start, ma, ka);
      b.ReadInitialMemory(r.start, mb, kb);
      ASSERT_EQ(ma, mb);
      ASSERT_EQ(kb, std::vector<std::uint8_t>(r.size, 1));
    }
    ExpectSameReplay(a, b);
  }
}

TEST(UsercornTraceWriterTest, UsercornConvertsToTheSameEvents) {
  auto in = usercorn_test::OpenBytes(testing::GeneratedUsercornTrace(5, 2000));
  ASSERT_TRUE(in.ok());
  const std::string path = TempPath("self.ucir");
  ASSERT_TRUE(Convert(**in, path).ok());
  auto out = OpenTraceFile(path);
  std::filesystem::remove(path);
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  auto first = usercorn_test::OpenBytes(testing::GeneratedUsercornTrace(5, 2000));
  ExpectSameReplay(**first, **out);
}

// AVX-512 state (a recording on a machine that has it): ZMMn SPREGs in
// the keyframe and in an instruction survive the conversion, zmmNh included.
TEST(UsercornTraceWriterTest, ZmmRegistersSurviveConversion) {
  auto w = UsercornWriter::CreateMemory();
  std::uint8_t z3[64], z31[64], z3_after[64];
  for (int i = 0; i < 64; ++i) {
    z3[i] = static_cast<std::uint8_t>(i);
    z31[i] = static_cast<std::uint8_t>(0x40 | i);
    z3_after[i] = static_cast<std::uint8_t>(0x80 | i);
  }
  w->BeginKeyframe(0);
  w->SpReg(189, z3);   // UC_X86_REG_ZMM3
  w->SpReg(217, z31);  // UC_X86_REG_ZMM31
  w->EndFrame();
  w->BeginFrame(0);
  w->Jmp(0x1000, 6);
  w->SpReg(189, z3_after);
  w->Step(6);
  w->EndFrame();
  ASSERT_TRUE(w->Finish().ok());
  const std::vector<std::uint8_t> bytes = w->TakeBytes();
  auto in = usercorn_test::OpenBytes(bytes);
  ASSERT_TRUE(in.ok()) << in.status().ToString();
  const auto threads = (*in)->InitialRegisters();
  const RegisterFile& before = threads.at(0).second;
  const RegisterId zmm3h = *X86_64().Find("zmm3h"), zmm31h = *X86_64().Find("zmm31h");
  ASSERT_TRUE(before.known(zmm3h) && before.known(zmm31h));  // the source knows them

  const std::string path = TempPath("zmm.ucir");
  ASSERT_TRUE(Convert(**in, path).ok());
  auto out = OpenTraceFile(path);
  std::filesystem::remove(path);
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  auto again = usercorn_test::OpenBytes(bytes);
  ExpectSameReplay(**again, **out);
}

// Every event's thread and every thread's carried registers after it.
std::vector<std::string> ThreadStates(TraceReader& reader) {
  std::map<ThreadId, RegisterFile> threads;
  for (const auto& [tid, regs] : reader.InitialRegisters()) threads.insert_or_assign(tid, regs);
  std::vector<std::string> out;
  Event e;
  while (true) {
    auto more = reader.Next(&e);
    EXPECT_TRUE(more.ok()) << more.status().ToString();
    if (!more.ok() || !*more) break;
    RegisterFile& regs = threads.try_emplace(e.thread, X86_64()).first->second;
    for (const RegisterWrite& w : e.registers) regs.Apply(w);
    std::string line = "t" + std::to_string(e.thread.value) + ":";
    for (const auto& [tid, file] : threads) {
      line += " [" + std::to_string(tid.value);
      for (RegisterId id = 0; id < X86_64().register_count(); ++id) {
        if (Carried(id) && file.known(id)) {
          line += " " + std::string(X86_64().info(id).name) + "=" + HexBytes(file.bytes(id));
        }
      }
      line += "]";
    }
    out.push_back(line);
  }
  return out;
}

// A two-thread UCIR as `backstep record` writes it (FRAMEs per pid, a new
// thread's registers and JMP as an event of its own) converts with the same
// events, threads and registers (it used to be refused: "usercorn traces
// hold one process").
TEST(UsercornTraceWriterTest, TwoThreadRecordingConverts) {
  const UsercornArch& u = UsercornX86_64();
  const std::uint16_t rax = u.UnicornOf(*X86_64().Find("rax"));
  const std::uint16_t rsp = u.UnicornOf(*X86_64().Find("rsp"));
  auto w = UsercornWriter::CreateMemory();
  const UsercornRegisterValue main_regs[] = {{rax, 1}, {rsp, 0x7000}};
  ASSERT_TRUE(w->Begin(0, main_regs, {}, {}, Address{0x1000}).ok());
  const UsercornRegisterValue set_rax[] = {{rax, 2}};
  UsercornInstruction insn;
  insn.pc = 0x1000;
  insn.size = 3;
  insn.registers = set_rax;
  w->AppendInstruction(insn);
  w->SwitchThread(1, Address{0x1003});
  const UsercornRegisterValue new_regs[] = {{rax, 9}, {rsp, 0x9000}};
  w->StartThread(new_regs, {}, 0x2000);
  insn.pc = 0x2000;
  insn.size = 2;
  const UsercornRegisterValue set_rax2[] = {{rax, 10}};
  insn.registers = set_rax2;
  w->AppendInstruction(insn);
  w->SwitchThread(0, Address{0x2002});
  insn.pc = 0x1003;
  insn.size = 1;
  insn.registers = {};
  w->AppendInstruction(insn);
  ASSERT_TRUE(w->Finish().ok());
  const std::vector<std::uint8_t> bytes = w->TakeBytes();

  auto in = usercorn_test::OpenBytes(bytes);
  ASSERT_TRUE(in.ok()) << in.status().ToString();
  const std::vector<std::string> want = ThreadStates(**in);
  ASSERT_EQ(want.size(), 4u);
  auto again = usercorn_test::OpenBytes(bytes);
  const std::string path = TempPath("threads.ucir");
  const Status s = Convert(**again, path);
  ASSERT_TRUE(s.ok()) << s.ToString();
  auto out = OpenTraceFile(path);
  std::filesystem::remove(path);
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  EXPECT_EQ(ThreadStates(**out), want);
}

TEST(UsercornTraceWriterTest, WhatUsercornCannotExpressIsUnsupported) {
  const std::string path = TempPath("unsupported.ucir");
  UsercornTraceWriter w(path);
  TraceHeader physical;
  physical.arch = &X86_64();
  physical.address_kind = AddressKind::kPhysical;
  EXPECT_TRUE(w.Begin(physical, {}, {}).IsUnsupported());

  TraceHeader header;
  header.arch = &X86_64();
  std::vector<std::pair<ThreadId, RegisterFile>> two;
  two.emplace_back(ThreadId(1), RegisterFile(X86_64()));
  two.emplace_back(ThreadId(2), RegisterFile(X86_64()));
  EXPECT_TRUE(UsercornTraceWriter(path).Begin(header, two, {}).IsUnsupported());

  // A tracked register unknown at position 0 would read back as 0.
  RegisterFile partial(X86_64());
  partial.SetU64(X86_64().pc(), 0x1000);
  const Status unknown = UsercornTraceWriter(path).Begin(header, {{ThreadId(1), partial}}, {});
  EXPECT_TRUE(unknown.IsUnsupported());
  EXPECT_NE(unknown.message().find(": a usercorn keyframe gives every tracked register a value (0 "
                                   "when left out), and the source does not know "),
            std::string::npos)
      << unknown.ToString();

  UsercornTraceWriter ok(path);
  ASSERT_TRUE(ok.Begin(header, {}, {}).ok());
  Event e;
  e.thread = ThreadId(1);
  ASSERT_TRUE(ok.Append(e).ok());
  e.thread = ThreadId(2);
  EXPECT_TRUE(ok.Append(e).ok());  // another thread: FRAMEs of pid 1
  e.thread = ThreadId(1);
  e.flags = kEventClearsMemory;
  EXPECT_TRUE(ok.Append(e).IsUnsupported());
  EXPECT_FALSE(std::filesystem::exists(path));  // nothing committed
}

}  // namespace
}  // namespace backstep::core
