// gdb's own files (shared/samples/gdb_tfile, written by gdb 13.1 `tsave`):
// every expected value of their README, checked through the generic
// TraceReader interface and through the typed API.
#include <gtest/gtest.h>

#include <map>

#include "backstep/core/cursor.h"
#include "backstep/core/format_registry.h"
#include "backstep/core/trace.h"
#include "backstep/testing/tfile_fixtures.h"
#include "formats/tfile/tfile_reader.h"

namespace backstep::core {
namespace {

// Frame n's state (position n + 1): what the event of frame n leaves after
// its clears.
struct FrameState {
  RegisterFile regs{X86_64()};
  std::map<Address, std::uint8_t> memory;
  std::string description;
  std::uint32_t flags = 0;
  EventKind kind = EventKind::kInstruction;
  ThreadId thread;

  std::optional<std::uint64_t> U64At(Address a, int n = 8) const {
    std::uint64_t v = 0;
    for (int i = 0; i < n; ++i) {
      auto it = memory.find(a + i);
      if (it == memory.end()) return std::nullopt;
      v |= std::uint64_t{it->second} << (8 * i);
    }
    return v;
  }
  std::uint64_t Reg(std::string_view name) const { return regs.u64(*X86_64().Find(name)); }
  bool Known(std::string_view name) const { return regs.known(*X86_64().Find(name)); }
};

std::string SamplePath(const std::string& name) {
  return testing::SamplesDir() + "/gdb_tfile/" + name;
}

class TfileSampleTest : public ::testing::Test {
 protected:
  void Load(const std::string& name) {
    auto source = MapFile(SamplePath(name));
    ASSERT_TRUE(source.ok()) << source.status().ToString()
                             << " (set BACKSTEP_SAMPLES_DIR to shared/samples)";
    auto reader = TfileReader::Open(*source);
    ASSERT_TRUE(reader.ok()) << reader.status().ToString();
    reader_ = std::move(*reader);
    Event e;
    while (true) {
      auto more = reader_->Next(&e);
      ASSERT_TRUE(more.ok()) << more.status().ToString();
      if (!*more) break;
      FrameState& s = frames_.emplace_back();
      s.flags = e.flags;
      s.kind = e.kind;
      s.thread = e.thread;
      s.description = std::string(e.description);
      for (const RegisterWrite& w : e.registers) s.regs.Apply(w);
      for (const MemoryAccess& m : e.writes) {
        for (std::size_t i = 0; i < m.data.size(); ++i) s.memory[m.address + i] = m.data[i];
      }
    }
  }
  std::string Property(std::string_view key, int nth = 0) const {
    for (const auto& [k, v] : reader_->header().properties) {
      if (k == key && nth-- == 0) return v;
    }
    return "<none>";
  }

  std::unique_ptr<TfileReader> reader_;
  std::vector<FrameState> frames_;
};

// a and b are 8-byte slots at rbp-0x18 and rbp-0x20 (the 3rd and 4th M
// blocks of tracepoint 2's frames); r is at rbp-8 (tracepoint 3).
constexpr Address kCounter = 0x404040, kBuf = 0x404060;

TEST_F(TfileSampleTest, WorkFramesAndTracepoints) {
  ASSERT_NO_FATAL_FAILURE(Load("work_amd64.tf"));
  const TfileReader& r = *reader_;
  ASSERT_EQ(frames_.size(), 15u);
  EXPECT_EQ(r.frame_count(), 15u);
  EXPECT_TRUE(r.damage().ok());
  EXPECT_EQ(r.header().declared_events, 15u);
  EXPECT_EQ(r.header().format, "tfile");
  EXPECT_EQ(r.header().arch, &X86_64());
  EXPECT_EQ(r.layout().block_size(), 0x970u);
  EXPECT_TRUE(r.layout().unmapped().empty());
  EXPECT_EQ(Property("frames"), "15, end marker at 0xa329");

  // tp lines in the order T3, T4, T2; gdb numbers them 3, 2, 1.
  ASSERT_EQ(r.tracepoints().size(), 3u);
  const std::uint32_t numbers[] = {3, 4, 2};
  const Address addresses[] = {0x4011e8, 0x40115f, 0x401132};
  const int local[] = {3, 2, 1};
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(r.tracepoints()[i].number, numbers[i]);
    EXPECT_EQ(r.tracepoints()[i].address, addresses[i]);
    EXPECT_EQ(r.definitions().GdbLocalNumber(i), local[i]);
    EXPECT_TRUE(r.tracepoints()[i].enabled);
    EXPECT_EQ(r.tracepoints()[i].hits, 5u);
  }
  const TfileTracepoint& t2 = r.tracepoints()[2];
  EXPECT_EQ(t2.at_string, "work");
  EXPECT_EQ(t2.cmd_strings,
            (std::vector<std::string>{"collect $regs", "collect counter", "collect buf",
                                      "collect a, b", "collect *(char*)$rsp@64"}));
  EXPECT_EQ(t2.actions.size(), 6u);
  EXPECT_EQ(t2.actions[1], "M-1,404040,8");
  EXPECT_EQ(r.tracepoints()[0].at_string, "prog.c:9");
  EXPECT_EQ(r.tracepoints()[1].cmd_strings,
            (std::vector<std::string>{"teval $hits = $hits + 1", "collect $hits"}));
  ASSERT_EQ(r.tsvs().size(), 2u);
  EXPECT_EQ(r.tsvs()[0].name, "trace_timestamp");
  EXPECT_TRUE(r.tsvs()[0].builtin);
  EXPECT_EQ(r.tsvs()[1].name, "hits");
  EXPECT_EQ(Property("tsv 2"), "$hits initial 0");
  EXPECT_EQ(
      Property("tracepoint 2").rfind("0x401132 enabled, step 0, pass 0, hits 5, gdb number 1", 0),
      0u)
      << Property("tracepoint 2");
  EXPECT_NE(Property("tracepoint 2").find("collects: collect $regs; collect counter"),
            std::string::npos);
  EXPECT_NE(Property("trace status").find("15 frames (15 created)"), std::string::npos)
      << Property("trace status");

  const int frame_tp[] = {2, 4, 3};
  const Address frame_address[] = {0x401132, 0x40115f, 0x4011e8};
  for (std::uint64_t n = 0; n < 15; ++n) {
    EXPECT_EQ(r.frame_tracepoint(n), frame_tp[n % 3]) << n;
    EXPECT_EQ(frames_[n].kind, EventKind::kFrame);
    EXPECT_EQ(frames_[n].flags, kEventClearsRegisters | kEventClearsMemory);
    EXPECT_EQ(frames_[n].thread, ThreadId(1));
    ASSERT_NE(r.FrameTracepoint(n), nullptr);
    EXPECT_EQ(r.FrameTracepoint(n)->address, frame_address[n % 3]);
  }
}

TEST_F(TfileSampleTest, WorkValues) {
  ASSERT_NO_FATAL_FAILURE(Load("work_amd64.tf"));
  const FrameState& f0 = frames_[0];
  EXPECT_EQ(f0.Reg("rsp"), 0x7fffffffe570u);
  EXPECT_EQ(f0.Reg("rip"), 0x401132u);
  const Address rbp = f0.Reg("rbp");
  EXPECT_EQ(f0.U64At(rbp - 0x18), 0u);  // a
  EXPECT_EQ(f0.U64At(rbp - 0x20), 0u);  // b
  EXPECT_EQ(f0.U64At(kCounter), 0u);
  EXPECT_EQ(f0.Reg("fctrl"), 0x37fu);
  EXPECT_EQ(f0.Reg("ftag"), 0xffffu);
  EXPECT_EQ(f0.Reg("mxcsr"), 0x1f80u);
  EXPECT_TRUE(f0.Known("zmm31h"));
  EXPECT_TRUE(f0.Known("fpr0"));  // from st0..st7 through TOP

  const FrameState& f3 = frames_[3];
  EXPECT_EQ(f3.U64At(f3.Reg("rbp") - 0x18), 1u);
  EXPECT_EQ(f3.U64At(f3.Reg("rbp") - 0x20), 0u);
  EXPECT_EQ(f3.U64At(kBuf, 1), std::uint64_t{'A'});

  const FrameState& f12 = frames_[12];
  EXPECT_EQ(f12.U64At(f12.Reg("rbp") - 0x18), 4u);
  EXPECT_EQ(f12.U64At(f12.Reg("rbp") - 0x20), 33u);
  EXPECT_EQ(f12.U64At(kCounter), 33u);
  EXPECT_EQ(f12.U64At(kBuf, 5), 0x0056'4a44'41u);  // "ADJV\0"

  EXPECT_EQ(frames_[5].U64At(frames_[5].Reg("rbp") - 8), 3u);  // r
  EXPECT_EQ(frames_[14].U64At(frames_[14].Reg("rbp") - 8), 45u);
  EXPECT_EQ(frames_[14].Reg("rip"), 0x4011e8u);

  EXPECT_EQ(frames_[13].description, "tracepoint 4, $hits = 5");
  auto f13 = reader_->ReadFrame(13);
  ASSERT_TRUE(f13.ok());
  EXPECT_EQ(f13->tsv_values, (std::vector<TfileTsvValue>{{2, 5}}));
  EXPECT_EQ(f13->header.size, 13u);
  EXPECT_TRUE(f13->registers.empty());

  // Frame 1: no R block; gdb reports rip = the tracepoint's address.
  const FrameState& f1 = frames_[1];
  for (RegisterId id = 0; id < X86_64().register_count(); ++id) {
    EXPECT_EQ(f1.regs.known(id), id == X86_64().pc()) << X86_64().info(id).name;
  }
  EXPECT_EQ(f1.Reg("rip"), 0x40115fu);
  EXPECT_TRUE(f1.memory.empty());
  EXPECT_EQ(f1.U64At(kCounter), std::nullopt);

  // Memory outside a frame's M blocks is unknown.
  EXPECT_EQ(f0.U64At(kCounter + 8, 1), std::nullopt);
  EXPECT_EQ(f0.U64At(kBuf + 64, 1), std::nullopt);
  EXPECT_EQ(frames_[2].U64At(kCounter), std::nullopt);
  EXPECT_EQ(frames_[2].memory.size(), 8u);
  EXPECT_EQ(f0.memory.size(), 8u + 64 + 8 + 8 + 64);
}

TEST_F(TfileSampleTest, Stepping) {
  ASSERT_NO_FATAL_FAILURE(Load("stepping_amd64.tf"));
  const TfileReader& r = *reader_;
  ASSERT_EQ(frames_.size(), 25u);
  ASSERT_EQ(r.tracepoints().size(), 1u);
  const TfileTracepoint& tp = r.tracepoints()[0];
  EXPECT_EQ(tp.number, 2u);
  EXPECT_EQ(tp.address, 0x401132u);
  EXPECT_EQ(tp.step_count, 4u);
  EXPECT_EQ(tp.actions.front(), "R0100c0");
  ASSERT_EQ(tp.step_actions.size(), 1u);
  EXPECT_EQ(tp.step_actions[0], "R0fffffffffffffffffffffffffffffffffffff");
  const Address rips[] = {0x401132, 0x401136, 0x401139, 0x40113c, 0x40113f};
  for (std::uint64_t n = 0; n < 25; ++n) {
    SCOPED_TRACE("frame " + std::to_string(n));
    EXPECT_EQ(r.frame_tracepoint(n), 2);
    ASSERT_NE(r.FrameTracepoint(n), nullptr);  // what gdb's tfind pc compares
    EXPECT_EQ(r.FrameTracepoint(n)->address, 0x401132u);
    EXPECT_EQ(frames_[n].Reg("rip"), rips[n % 5]);  // the R block's pc
    if (n % 5 == 0) {
      EXPECT_EQ(frames_[n].U64At(frames_[n].Reg("rbp") - 0x18), n / 5);  // a = i
    } else {
      EXPECT_TRUE(frames_[n].memory.empty());
    }
  }
}

// Through the index and a cursor: each position shows one frame alone.
TEST(TfileSampleTraceTest, CursorSeesEachFrameAlone) {
  auto trace = Trace::OpenWith(
      []() -> Expected<std::unique_ptr<TraceReader>> {
        BACKSTEP_ASSIGN_OR_RETURN(auto source, MapFile(SamplePath("work_amd64.tf")));
        BACKSTEP_ASSIGN_OR_RETURN(auto reader, TfileReader::Open(source));
        return std::unique_ptr<TraceReader>(std::move(reader));
      },
      "");
  ASSERT_TRUE(trace.ok()) << trace.status().ToString();
  EXPECT_EQ((*trace)->event_count(), 15u);
  auto cursor = (*trace)->NewCursor();
  ASSERT_TRUE(cursor.ok());
  Cursor& c = **cursor;
  auto counter = [&c]() -> std::optional<std::uint64_t> {
    std::uint8_t out[8], known[8];
    EXPECT_TRUE(c.ReadMemory(kCounter, out, known).ok());
    std::uint64_t v = 0;
    for (int i = 0; i < 8; ++i) {
      if (!known[i]) return std::nullopt;
      v |= std::uint64_t{out[i]} << (8 * i);
    }
    return v;
  };
  const RegisterId rsp = *X86_64().Find("rsp");
  // Position 0: before the first frame, nothing is known.
  EXPECT_EQ(c.Pc(ThreadId(1)), std::nullopt);
  EXPECT_EQ(counter(), std::nullopt);
  for (std::uint64_t frame : {12u, 0u, 1u, 13u, 2u}) {  // in no particular order
    SCOPED_TRACE("frame " + std::to_string(frame));
    ASSERT_TRUE(c.Seek(Position(frame + 1)).ok());
    auto regs = c.Registers(ThreadId(1));
    ASSERT_TRUE(regs.ok());
    switch (frame % 3) {
      case 0:  // tracepoint 2: registers, counter
        EXPECT_EQ(c.Pc(ThreadId(1)), 0x401132u);
        EXPECT_EQ(counter(), frame == 12 ? 33u : 0u);
        EXPECT_TRUE((*regs)->known(rsp));
        break;
      case 1:  // tracepoint 4: only the pc, no memory
        EXPECT_EQ(c.Pc(ThreadId(1)), 0x40115fu);
        EXPECT_EQ(counter(), std::nullopt);
        EXPECT_FALSE((*regs)->known(rsp));
        break;
      case 2:  // tracepoint 3: registers, not the counter
        EXPECT_EQ(c.Pc(ThreadId(1)), 0x4011e8u);
        EXPECT_EQ(counter(), std::nullopt);
        break;
    }
  }
}

TEST(TfileSampleRegistryTest, SniffedAndOpened) {
  for (const char* name : {"work_amd64.tf", "stepping_amd64.tf"}) {
    auto reader = OpenTraceFile(SamplePath(name));
    ASSERT_TRUE(reader.ok()) << reader.status().ToString();
    EXPECT_EQ((*reader)->header().format, "tfile");
  }
  ASSERT_NE(FindFormat("tfile"), nullptr);
  EXPECT_TRUE(FindFormat("tfile")->create_writer);
}

}  // namespace
}  // namespace backstep::core
