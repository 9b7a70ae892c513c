// TfileWriter -> TfileReader: definitions, every register layout, frames of
// every block kind, resume positions.
#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <random>

#include "backstep/testing/reven_fixtures.h"
#include "backstep/testing/tfile_fixtures.h"
#include "formats/tfile/tfile_reader.h"
#include "formats/tfile/tfile_writer.h"

namespace backstep::core {
namespace {

RegisterId Id(std::string_view name) { return *X86_64().Find(name); }

std::unique_ptr<TfileReader> OpenBytes(std::vector<std::uint8_t> bytes) {
  auto r = TfileReader::Open(MemorySource(std::move(bytes), "rt.tf"));
  EXPECT_TRUE(r.ok()) << r.status().ToString();
  return r.ok() ? std::move(*r) : nullptr;
}

struct Frame {
  RegisterFile regs{X86_64()};
  std::map<Address, std::uint8_t> memory;
  std::string description;
};

std::vector<Frame> ReadAll(TfileReader& reader) {
  std::vector<Frame> out;
  Event e;
  while (true) {
    auto more = reader.Next(&e);
    EXPECT_TRUE(more.ok()) << more.status().ToString();
    if (!more.ok() || !*more) break;
    EXPECT_EQ(e.flags, kEventClearsRegisters | kEventClearsMemory);
    Frame& f = out.emplace_back();
    for (const RegisterWrite& w : e.registers) f.regs.Apply(w);
    for (const MemoryAccess& m : e.writes) {
      for (std::size_t i = 0; i < m.data.size(); ++i) f.memory[m.address + i] = m.data[i];
    }
    f.description = std::string(e.description);
  }
  return out;
}

TEST(TfileRoundTripTest, SmallFile) {
  for (bool tdesc : {true, false}) {
    SCOPED_TRACE(tdesc ? "with tdesc" : "without tdesc");
    auto reader = OpenBytes(testing::SmallTfile(tdesc));
    ASSERT_TRUE(reader);
    EXPECT_EQ(reader->header().declared_events, testing::kSmallTfileFrames);
    EXPECT_EQ(reader->layout().block_size(), 816u);
    EXPECT_EQ(
        reader->layout().description().starts_with(tdesc ? "tdesc i386:x86-64: " : "no tdesc"),
        true)
        << reader->layout().description();
    EXPECT_NE(reader->definitions().status->notes.find("small"), std::string::npos);
    const std::vector<Frame> f = ReadAll(*reader);
    ASSERT_EQ(f.size(), testing::kSmallTfileFrames);

    // 0: the full register file through the layout, st through TOP = 5.
    EXPECT_EQ(f[0].regs.u64(Id("rip")), 0x401132u);
    EXPECT_EQ(f[0].regs.u64(Id("rax")), 0x1122334455667788u);
    EXPECT_EQ(f[0].regs.u64(Id("fstat")), 5u << 11);
    EXPECT_EQ(f[0].regs.u64(Id("fs_base")), 0x7ffff7d8a740u);
    for (int i = 0; i < 8; ++i) {
      auto b = f[0].regs.bytes(Id("fpr" + std::to_string(i)));
      EXPECT_EQ(b[0], 0xf0 + i) << i;
      EXPECT_EQ(b[9], 0x3f);
    }
    std::uint8_t st0[10];
    ASSERT_TRUE(f[0].regs.Read(Id("st0"), st0));
    EXPECT_EQ(st0[0], 0xf5);                  // ST(0) = R[TOP]
    EXPECT_TRUE(f[0].regs.known(Id("rcx")));  // unknown when written: a known zero
    EXPECT_EQ(f[0].regs.u64(Id("rcx")), 0u);
    EXPECT_FALSE(f[0].regs.known(Id("zmm0h")));  // not in the layout
    EXPECT_FALSE(f[0].regs.known(Id("cr3")));
    EXPECT_EQ(f[0].memory.at(0x404040), 3);
    EXPECT_EQ(f[0].memory.at(0x404060), 'A');
    EXPECT_EQ(f[0].memory.size(), 72u);
    EXPECT_EQ(f[0].description, "tracepoint 2");

    // 1: V only: pc from the tracepoint, nothing else.
    EXPECT_EQ(f[1].regs.u64(Id("rip")), 0x40115fu);
    EXPECT_FALSE(f[1].regs.known(Id("rsp")));
    EXPECT_TRUE(f[1].memory.empty());
    EXPECT_EQ(f[1].description, "tracepoint 4, $hits = 1");

    // 2: overlapping M blocks: the first wins (gdb).
    EXPECT_EQ(f[2].regs.u64(Id("rip")), 0x4011e8u);
    std::string mem;
    for (const auto& [a, b] : f[2].memory) mem += static_cast<char>(b);
    EXPECT_EQ(mem, "aaaabb");

    // 3: while-stepping tracepoint, 4: two locations: no pc guess.
    for (int n : {3, 4}) {
      for (RegisterId id = 0; id < X86_64().register_count(); ++id) {
        EXPECT_FALSE(f[n].regs.known(id)) << n << " " << X86_64().info(id).name;
      }
    }
    EXPECT_EQ(f[4].description, "tracepoint 5, tsv 9 = -3");

    // 5: the S block is skipped and reported.
    EXPECT_EQ(f[5].memory.at(0x2000), 'x');
    EXPECT_EQ(f[5].regs.u64(Id("rip")), 0x401132u);
    bool reported = false;
    for (const auto& [k, v] : reader->header().properties) {
      reported |= k == "static tracepoint data" && v == "S blocks skipped in 1 frames: 5";
    }
    EXPECT_TRUE(reported);
    auto frame5 = reader->ReadFrame(5);
    ASSERT_TRUE(frame5.ok());
    EXPECT_EQ(frame5->static_blocks, 1u);

    // 6: empty frame.
    EXPECT_EQ(f[6].regs.u64(Id("rip")), 0x401132u);
    EXPECT_TRUE(f[6].memory.empty());
  }
}

TEST(TfileRoundTripTest, Definitions) {
  std::vector<TfileTsv> tsvs = {{1, 0, true, "trace_timestamp"}, {7, -42, false, "neg"}};
  std::vector<TfileTracepoint> tps(3);
  tps[0].number = 9;
  tps[0].address = 0xffffffff81000000;
  tps[0].enabled = false;
  tps[0].step_count = 3;
  tps[0].pass_count = 10;
  tps[0].fast_size = 5;
  tps[0].condition = "2600071a27";
  tps[0].actions = {"R0100c0", "X0000000F,26000622100222e816080222080c27", "L"};
  tps[0].step_actions = {"M7,-8,10"};
  tps[0].at_string = "*0xffffffff81000000";
  tps[0].cond_string = "x == 3";
  tps[0].cmd_strings = {"collect $rip", "while-stepping 3", "collect $regs", "end"};
  tps[0].hits = 0x1234;
  tps[0].traceframe_usage = 0;
  tps[1].number = 0x7fff;
  tps[1].is_static = true;
  tps[2].number = 0x10000;  // cannot own frames, but can exist
  tps[2].address = 0x401000;
  for (auto& tp : tps) tp.defined = true;
  std::vector<std::uint8_t> bytes;
  auto w = TfileWriter::CreateInMemory(&bytes);
  ASSERT_TRUE(w->WriteDefinitions(tsvs, tps).ok());
  w->BeginFrame(0x7fff);
  ASSERT_TRUE(w->EndFrame().ok());
  ASSERT_TRUE(w->Finish().ok());
  auto reader = OpenBytes(bytes);
  ASSERT_TRUE(reader);
  EXPECT_EQ(reader->tsvs(), tsvs);
  EXPECT_EQ(reader->tracepoints(), tps);
  EXPECT_TRUE(reader->definitions().warnings.empty());
  EXPECT_EQ(reader->frame_count(), 1u);
  EXPECT_EQ(reader->frame_tracepoint(0), 0x7fff);
  EXPECT_EQ(reader->definitions().status->frames, 1u);
}

// Every register of every layout, random values, with and without tdesc.
TEST(TfileRoundTripTest, EveryLayout) {
  std::mt19937_64 rng(7);
  const std::uint32_t sets[] = {kFeatureCore | kFeatureSse,
                                kFeatureCore | kFeatureSse | kFeatureLinux,
                                kFeatureCore | kFeatureSse | kFeatureLinux | kFeatureSegments,
                                kDefaultX86_64Features,
                                kDefaultX86_64Features | kFeatureAvx512,
                                kAllX86_64Features};
  for (std::uint32_t features : sets) {
    for (bool tdesc : {true, false}) {
      SCOPED_TRACE(std::to_string(features) + (tdesc ? " tdesc" : ""));
      RegisterFile regs(X86_64());
      for (const GdbSlot& s : X86_64().GdbLayout(features)) {
        if (X86_64().info(s.reg).derived) continue;
        std::uint8_t v[64];
        for (auto& b : v) b = static_cast<std::uint8_t>(rng());
        regs.Set(s.reg, v);
      }
      for (int i = 0; i < 8; ++i) {
        std::uint8_t v[10];
        for (auto& b : v) b = static_cast<std::uint8_t>(rng());
        regs.Set(Id("fpr" + std::to_string(i)), v);
      }
      std::vector<std::uint8_t> bytes;
      TfileWriterOptions options;
      options.features = features;
      options.write_tdesc = tdesc;
      auto w = TfileWriter::CreateInMemory(&bytes, options);
      w->BeginFrame(1);
      w->AddRegisters(regs);
      ASSERT_TRUE(w->EndFrame().ok());
      ASSERT_TRUE(w->Finish().ok());
      auto reader = OpenBytes(bytes);
      ASSERT_TRUE(reader);
      EXPECT_EQ(reader->layout().block_size(), X86_64().GdbBlockSize(features));
      EXPECT_TRUE(reader->layout().notes().empty()) << reader->layout().notes().front();
      auto back = reader->FrameRegisters(0);
      ASSERT_TRUE(back.ok());
      EXPECT_TRUE(*back == regs);
    }
  }
}

// An exporter's file: one tracepoint per pc, 32767 of them, one frame each.
TEST(TfileRoundTripTest, ManyTracepoints) {
  std::vector<TfileTracepoint> tps(0x7fff);
  for (std::size_t i = 0; i < tps.size(); ++i) {
    tps[i].number = static_cast<std::uint32_t>(tps.size() - i);  // descending: gdb keeps them
    tps[i].address = 0x400000 + 4 * tps[i].number;
    tps[i].defined = true;
  }
  std::vector<std::uint8_t> bytes;
  auto w = TfileWriter::CreateInMemory(&bytes);
  ASSERT_TRUE(w->WriteDefinitions({}, tps).ok());
  for (int n = 1; n <= 0x7fff; ++n) {
    w->BeginFrame(n);
    ASSERT_TRUE(w->EndFrame().ok());
  }
  ASSERT_TRUE(w->Finish().ok());
  auto reader = OpenBytes(bytes);
  ASSERT_TRUE(reader);
  ASSERT_EQ(reader->frame_count(), 0x7fffu);
  for (std::uint64_t n = 0; n < reader->frame_count(); n += 999) {
    ASSERT_NE(reader->FrameTracepoint(n), nullptr);
    EXPECT_EQ(reader->FrameTracepoint(n)->address, 0x400000 + 4 * (n + 1));
  }
  EXPECT_EQ(reader->definitions().GdbLocalNumber(0), 0x7fff);  // = its target number
  std::size_t listed = 0;
  for (const auto& [k, v] : reader->header().properties) listed += k.starts_with("tracepoint");
  EXPECT_EQ(listed, 201u);  // 200 and a "more" line
}

TEST(TfileRoundTripTest, LargeMemoryIsSplit) {
  std::vector<std::uint8_t> big(70000);
  for (std::size_t i = 0; i < big.size(); ++i) big[i] = static_cast<std::uint8_t>(i * 7);
  std::vector<std::uint8_t> bytes;
  auto w = TfileWriter::CreateInMemory(&bytes);
  w->BeginFrame(3);
  w->AddMemory(0x10000, big);
  ASSERT_TRUE(w->EndFrame().ok());
  ASSERT_TRUE(w->Finish().ok());
  auto reader = OpenBytes(bytes);
  ASSERT_TRUE(reader);
  auto frame = reader->ReadFrame(0);
  ASSERT_TRUE(frame.ok());
  ASSERT_EQ(frame->memory.size(), 2u);
  EXPECT_EQ(frame->memory[0].data.size(), 65535u);
  EXPECT_EQ(frame->memory[1].address, 0x10000u + 65535);
  std::vector<std::uint8_t> joined(frame->memory[0].data.begin(), frame->memory[0].data.end());
  joined.insert(joined.end(), frame->memory[1].data.begin(), frame->memory[1].data.end());
  EXPECT_EQ(joined, big);
}

TEST(TfileRoundTripTest, TellSeekResume) {
  auto reader = OpenBytes(testing::SmallTfile());
  ASSERT_TRUE(reader);
  std::vector<ReaderPosition> positions;
  std::vector<std::string> described;
  Event e;
  while (true) {
    positions.push_back(reader->Tell());
    auto more = reader->Next(&e);
    ASSERT_TRUE(more.ok());
    if (!*more) break;
    described.push_back(testing::DescribeEvent(e));
  }
  ASSERT_EQ(described.size(), testing::kSmallTfileFrames);
  for (std::size_t i = positions.size(); i-- > 0;) {
    ASSERT_TRUE(reader->Seek(positions[i]).ok());
    auto more = reader->Next(&e);
    ASSERT_TRUE(more.ok());
    EXPECT_EQ(*more, i < described.size());
    if (*more) {
      EXPECT_EQ(testing::DescribeEvent(e), described[i]);
    }
  }
  EXPECT_EQ(reader->Seek({positions[1].offset + 1, 1}).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(reader->Seek({positions[1].offset, 2}).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(reader->Seek({positions.back().offset, 99}).code(), StatusCode::kInvalidArgument);
}

TEST(TfileWriterTest, WritesAtomicallyToDisk) {
  const std::string dir = ::testing::TempDir() + "/tfile_writer_test";
  std::filesystem::create_directories(dir);
  const std::string path = dir + "/out.tf";
  std::filesystem::remove(path);
  {
    auto w = TfileWriter::Create(path);
    ASSERT_TRUE(w.ok());
    (*w)->BeginFrame(1);
    ASSERT_TRUE((*w)->EndFrame().ok());
    EXPECT_FALSE(std::filesystem::exists(path));  // not before Finish()
    ASSERT_TRUE((*w)->Finish().ok());
  }
  auto source = MapFile(path);
  ASSERT_TRUE(source.ok());
  auto reader = TfileReader::Open(*source);
  ASSERT_TRUE(reader.ok()) << reader.status().ToString();
  EXPECT_EQ((*reader)->frame_count(), 1u);
  EXPECT_EQ((*reader)->header().declared_events, 1u);
  {
    auto w = TfileWriter::Create(dir + "/abandoned.tf");
    ASSERT_TRUE(w.ok());
  }
  EXPECT_FALSE(std::filesystem::exists(dir + "/abandoned.tf"));
}

TEST(TfileWriterTest, RefusesWhatGdbCannotRead) {
  TfileTracepoint long_cmd;
  long_cmd.number = 1;
  long_cmd.address = 0x1000;
  long_cmd.cmd_strings = {std::string(600, 'c')};  // 1200 hex digits
  std::vector<std::uint8_t> bytes;
  auto w = TfileWriter::CreateInMemory(&bytes);
  Status s = w->WriteDefinitions({}, {long_cmd});
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("1000 or more"), std::string::npos) << s.ToString();
  EXPECT_EQ(w->Finish().code(), StatusCode::kInvalidArgument);

  for (int tpnum : {0, -1, 0x8000}) {
    std::vector<std::uint8_t> b;
    auto w2 = TfileWriter::CreateInMemory(&b);
    w2->BeginFrame(tpnum);
    EXPECT_EQ(w2->EndFrame().code(), StatusCode::kInvalidArgument) << tpnum;
    EXPECT_EQ(w2->Finish().code(), StatusCode::kInvalidArgument);
  }
  std::vector<std::uint8_t> b;
  auto w3 = TfileWriter::CreateInMemory(&b);
  EXPECT_EQ(w3->WriteDefinitions({}, {TfileTracepoint{}}).code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace backstep::core
