// RevenWriter -> RevenReader round trips over every field, plus checks of
// the writer's exact bytes where the spec fixes them (continuation count
// bytes, escapes).
#include <gtest/gtest.h>

#include "backstep/testing/reven_fixtures.h"
#include "formats/reven/reven_reader.h"
#include "formats/reven/reven_writer.h"

namespace backstep::core {
namespace {

RegisterId Id(std::string_view name) { return *X86_64().Find(name); }

std::unique_ptr<RevenReader> Open(std::vector<std::uint8_t> bytes, std::string name = "rt.bin") {
  auto r = RevenReader::Open(MemorySource(std::move(bytes), std::move(name)));
  EXPECT_TRUE(r.ok()) << r.status().ToString();
  return r.ok() ? std::move(*r) : nullptr;
}

std::string Property(const TraceHeader& h, std::string_view key) {
  for (const auto& [k, v] : h.properties) {
    if (k == key) return v;
  }
  return "<none>";
}

std::vector<std::string> AllEvents(RevenReader& r) {
  auto replay = testing::ReplayReader(r, /*describe=*/true);
  EXPECT_TRUE(replay.ok()) << replay.status().ToString();
  return replay.ok() ? replay->described : std::vector<std::string>{};
}

TEST(RevenRoundTripTest, HeaderRegionsAndInitialState) {
  auto r = Open(testing::SmallRevenTrace());
  ASSERT_NE(r, nullptr);
  const TraceHeader& h = r->header();
  EXPECT_EQ(h.declared_events, 9u);
  ASSERT_EQ(h.regions.size(), 2u);
  EXPECT_EQ(h.regions[1].start, 0x3000u);
  EXPECT_EQ(h.regions[1].size, 0x80u);
  EXPECT_EQ(Property(h, "cpuid_max_phy_addr"), "0x28");
  EXPECT_EQ(Property(h, "unmapped registers"), "mystery");
  EXPECT_EQ(Property(h, "tool name"), "small");
  EXPECT_EQ(r->machine().phy_size, 2);
  // Memory across both regions and the gap between them.
  std::vector<std::uint8_t> out(0x2100), known(0x2100);
  r->ReadInitialMemory(0xff0, out, known);
  EXPECT_EQ(known[0xf], 0);
  EXPECT_EQ(known[0x10], 1);
  EXPECT_EQ(out[0x10], 0);  // memory[0] = 0 * 7
  EXPECT_EQ(out[0x11], 7);
  EXPECT_EQ(known[0x110], 0);
  EXPECT_EQ(known[0x2010], 1);
  EXPECT_EQ(out[0x2011], static_cast<std::uint8_t>(0x101 * 7));
  const RegisterFile regs = r->InitialRegisters()[0].second;
  EXPECT_EQ(regs.u64(Id("rax")), 0x1111u);
  EXPECT_EQ(regs.u64(Id("rip")), 0x1000u);
  EXPECT_EQ(regs.u64(Id("cs")), 0x33u);  // 2 bytes zero-extended to 4
  EXPECT_EQ(regs.u64(Id("rbx")), 0xbbbbu);
  EXPECT_EQ(regs.bytes(Id("xmm1"))[0], 0x55);
  EXPECT_EQ(regs.bytes(Id("zmm1h"))[31], 0x55);
  EXPECT_TRUE(regs.known(Id("ymm1h")));
  EXPECT_FALSE(regs.known(Id("rcx")));  // not in the trace
}

TEST(RevenRoundTripTest, EveryEventFeature) {
  auto r = Open(testing::SmallRevenTrace());
  ASSERT_NE(r, nullptr);
  std::vector<Event> events;
  Event e;
  RegisterFile regs = r->InitialRegisters()[0].second;
  std::vector<std::size_t> writes, registers;
  std::vector<EventKind> kinds;
  for (;;) {
    auto more = r->Next(&e);
    ASSERT_TRUE(more.ok()) << more.status().ToString();
    if (!*more) break;
    writes.push_back(e.writes.size());
    registers.push_back(e.registers.size());
    kinds.push_back(e.kind);
    for (const RegisterWrite& w : e.registers) regs.Apply(w);
    if (kinds.size() == 5) {  // event 4: the 300-byte write
      ASSERT_EQ(e.writes[0].data.size(), 300u);
      EXPECT_EQ(e.writes[0].data[299], static_cast<std::uint8_t>(0xc0 ^ 299));
    }
    if (kinds.size() == 6) {  // event 5: ADD carries across all ten bytes of x87r0
      const auto fpr0 = regs.bytes(Id("fpr0"));
      EXPECT_EQ(fpr0[0], 0);
      EXPECT_EQ(fpr0[8], 0);
      EXPECT_EQ(fpr0[9], 1);
      EXPECT_EQ(regs.u64(Id("rbx")), 0xccccu);
      EXPECT_EQ(regs.u64(Id("eflags")), 0x207u);  // 0x246 | 1 (event 1) & ~0x40
    }
    if (kinds.size() == 9) {  // event 8: zmm split, selector, SET operation
      ASSERT_EQ(e.registers.size(), 5u);
      EXPECT_EQ(e.registers[0].reg, Id("xmm1"));
      EXPECT_EQ(e.registers[1].reg, Id("ymm1h"));
      EXPECT_EQ(e.registers[1].value[0], 16);
      EXPECT_EQ(e.registers[2].reg, Id("zmm1h"));
      EXPECT_EQ(e.registers[2].value[31], 63);
      EXPECT_EQ(e.writes[0].address, 0x9000u);  // outside every region: kept
    }
  }
  EXPECT_EQ(writes, (std::vector<std::size_t>{1, 1, 16, 3, 1, 0, 0, 0, 1}));
  EXPECT_EQ(registers, (std::vector<std::size_t>{2, 2, 1, 16, 1, 3, 0, 0, 5}));
  EXPECT_EQ(kinds[1], EventKind::kException);
  EXPECT_EQ(kinds[6], EventKind::kInterrupt);
  EXPECT_EQ(regs.u64(Id("rip")), 0x1000u + 4 * 2);  // events 0, 2, 3, 4
  EXPECT_EQ(regs.u64(Id("rsp")), 0x7000u);
  EXPECT_EQ(regs.u64(Id("cs")), 0x2bu);
  EXPECT_EQ(regs.u64(Id("rax")), 0x10eu);
}

TEST(RevenRoundTripTest, WriterBytesFollowTheSpec) {
  std::vector<std::uint8_t> bytes = testing::SmallRevenTrace();
  auto r = Open(bytes);
  ASSERT_NE(r, nullptr);
  std::vector<std::uint64_t> at;
  Event e;
  for (;;) {
    at.push_back(r->Tell().offset);
    if (!*r->Next(&e)) break;
  }
  // Event 2: 16 memory entries of 4 bytes (PHY_SIZE 2, u8 len, 1 byte).
  EXPECT_EQ(bytes[at[2]], 0x0f);               // 14 entries + continuation
  EXPECT_EQ(bytes[at[2] + 1 + 14 * 4], 0x12);  // 2 entries, 1 register entry
  // Event 3: 3 memory entries (5 bytes), then 14 registers (9 bytes).
  EXPECT_EQ(bytes[at[3]], 0xf3);
  EXPECT_EQ(bytes[at[3] + 1 + 3 * 5 + 14 * 9], 0x20);
  // Event 4: address, length escape, PHY_SIZE-byte size 300.
  EXPECT_EQ(bytes[at[4] + 3], 0xff);
  EXPECT_EQ(bytes[at[4] + 4], 0x2c);
  EXPECT_EQ(bytes[at[4] + 5], 0x01);
  // Event 5: register id 0x101 as FF 01 01.
  EXPECT_EQ(bytes[at[5] + 1], 0xff);
  EXPECT_EQ(bytes[at[5] + 2], 0x01);
  EXPECT_EQ(bytes[at[5] + 3], 0x01);
  // Event 6: FF FF str8 then an empty diff.
  EXPECT_EQ(bytes[at[6]], 0xff);
  EXPECT_EQ(bytes[at[6] + 1], 0xff);
  EXPECT_EQ(bytes[at[6] + 2], 15);
  EXPECT_EQ(bytes[at[6] + 3 + 15], 0x00);
}

TEST(RevenRoundTripTest, PaddingMetadataV0AndUnpatchedCount) {
  const auto reference = AllEvents(*Open(testing::SmallRevenTrace()));
  ASSERT_EQ(reference.size(), 9u);
  // Unpatched event_count: the reader scans the section.
  auto scanned = Open(testing::SmallRevenTrace(/*patch_event_count=*/false));
  ASSERT_NE(scanned, nullptr);
  EXPECT_FALSE(scanned->header().declared_events.has_value());
  EXPECT_EQ(AllEvents(*scanned), reference);
  // Padding in every section and metadata version 0.
  RevenMachine m;
  m.phy_size = 8;
  m.regions = {{0x100, 4}};
  m.registers = {{0, 8, "rip"}};
  m.operations = {{1, 0, 1, {1, 0, 0, 0, 0, 0, 0, 0}}};
  RevenWriterOptions o;
  o.section_padding = 24;
  o.metadata.metadata_version = 0;
  auto w = RevenWriter::CreateMemory(m, o);
  w->WriteInitialMemory(std::vector<std::uint8_t>{1, 2, 3, 4});
  w->WriteInitialRegister(0, std::vector<std::uint8_t>(8, 0));
  for (int i = 0; i < 3; ++i) {
    w->BeginInstruction();
    w->WriteOperation(1);
    w->EndEvent();
  }
  ASSERT_TRUE(w->Finish().ok());
  auto r = Open(w->TakeBytes());
  ASSERT_NE(r, nullptr);
  EXPECT_EQ(r->metadata().metadata_version, 0u);
  auto replay = testing::ReplayReader(*r);
  ASSERT_TRUE(replay.ok());
  EXPECT_EQ(replay->events, 3u);
  EXPECT_EQ(replay->registers[0].second.u64(Id("rip")), 3u);
}

TEST(RevenRoundTripTest, WriterRejectsWhatItCannotEncode) {
  RevenMachine m;
  m.registers = {{0, 8, "rip"}};
  auto w = RevenWriter::CreateMemory(m);
  w->BeginInstruction();
  w->WriteRegister(0, std::vector<std::uint8_t>(4));  // wrong size
  w->EndEvent();
  EXPECT_FALSE(w->Finish().ok());
  auto w2 = RevenWriter::CreateMemory(m);
  w2->BeginInstruction();
  w2->WriteRegister(0, std::vector<std::uint8_t>(8));
  w2->WriteMemory(0, std::vector<std::uint8_t>(1));  // memory after a register
  w2->EndEvent();
  EXPECT_FALSE(w2->status().ok());
}

}  // namespace
}  // namespace backstep::core
