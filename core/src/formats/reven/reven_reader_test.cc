// RevenReader against hand-built bytes: the example of the reference
// reader's own test (tetrane/rvnbintrace test_trace_reader.cpp), rebuilt
// byte by byte from docs/formats/reven.md §1 without our writer, with register names
// our table knows (eflags for the reference's eax).
#include "formats/reven/reven_reader.h"

#include <gtest/gtest.h>

#include "backstep/testing/reven_fixtures.h"
#include "formats/reven/reven_format.h"

namespace backstep::core {
namespace {

using testing::RevenBytes;

RegisterId Id(std::string_view name) { return *X86_64().Find(name); }

std::uint64_t Value(const RegisterWrite& w) {
  std::uint64_t v = 0;
  for (int i = 0; i < 8; ++i) v |= std::uint64_t{w.value[i]} << (8 * i);
  return v;
}

// The reference example: PHY_SIZE 1, registers eflags (id 0, 4 bytes) and
// rax (id 1, 8 bytes), five operations 0xfa..0xfe, padded sections, an
// events section whose size (0xffff) runs past the end of the file.
std::vector<std::uint8_t> ReferenceExample(std::uint32_t metadata_version = 1) {
  RevenBytes s;
  testing::AppendHandMetadata(s, metadata_version);
  s.U64(17).U8(0).U64(0).U64(0);  // header + artificial padding
  const std::size_t machine = s.Begin();
  s.Str("x641").U8(1);
  s.U32(1).U8(0).U8(8);  // one region [0, 8)
  s.U32(2).U16(0).U16(4).Str8("eflags").U16(1).U16(8).Str8("rax");
  s.U32(5);
  s.U8(0xfa).U16(1).U8(1).U64(0x15);        // add rax
  s.U8(0xfb).U16(0).U8(0).U32(0x11333377);  // set eflags
  s.U8(0xfc).U16(0).U8(1).U32(0xfffefffe);  // add
  s.U8(0xfd).U16(0).U8(2).U32(0xf0f00f0f);  // and
  s.U8(0xfe).U16(0).U8(3).U32(0x0f0ff0f0);  // or
  s.U32(0);                                 // static registers
  s.Fill(32);                               // padding
  s.End(machine);
  s.U64(8).U64(0x0102030410121314);  // initial memory
  s.U64(20).U32(2).U16(0).U32(0).U16(1).U64(0xff000000000000aa);
  s.U64(0xffff).U64(13);
  s.U8(0x20).U8(1).U64(0xffaabbccddeeffaa).U8(0).U32(0xffaabbdd);
  s.U8(0x10).U8(0xff).U16(1).U64(0xffaabbccddeeffaa);
  s.U8(0xff).U8(0xff).Str8("event!").U8(0x10).U8(0).U32(0xeeffaa00);
  s.U8(0x11).U8(0x42).U8(4).U32(0xffaabbcc).U8(0).U32(0xffaabbee);
  s.U8(0x01).U8(0x48).U8(0xff).U8(8).U64(0xaabbccddeeffaaff);
  s.U8(0x20).U8(1).U64(0xffddbbccddeeffaa).U8(0xfb);
  s.U8(0x20).U8(0).U32(0x10a02201).U8(0xfc);
  s.U8(0x20).U8(0).U32(0xaa55aa55).U8(0xfd);
  s.U8(0x20).U8(0).U32(0x55aa55aa).U8(0xfe);
  s.U8(0x20).U8(1).U64(0x0000000082621635).U8(0xfa);
  s.U8(0x00);
  // Register-triggered continuation: M=1, R=F (14), then M=1, R=1.
  s.U8(0xf1).U8(0x42).U8(4).U32(0);
  for (int i = 0; i < 14; ++i) s.U8(0).U32(0xddeeffbb);
  s.U8(0x11).U8(0x46).U8(4).U32(0x11112222).U8(0).U32(0xddeeffcc);
  // Memory-triggered continuation: M=F (14), R=1, then M=1, R=1.
  s.U8(0x1f);
  for (int i = 0; i < 14; ++i) s.U8(0x42).U8(4).U32(0);
  s.U8(0).U32(0xddeeffcc);
  s.U8(0x11).U8(0x46).U8(4).U32(0x11112222).U8(0).U32(0xddeeffdd);
  return std::move(s.bytes());
}

std::unique_ptr<RevenReader> OpenBytes(std::vector<std::uint8_t> bytes) {
  auto r = RevenReader::Open(MemorySource(std::move(bytes), "ref.bin"));
  EXPECT_TRUE(r.ok()) << r.status().ToString();
  return r.ok() ? std::move(*r) : nullptr;
}

TEST(RevenReaderTest, ReferenceExampleEventByEvent) {
  auto reader = OpenBytes(ReferenceExample());
  ASSERT_NE(reader, nullptr);
  EXPECT_EQ(reader->header().declared_events, 13u);
  EXPECT_EQ(reader->header().address_kind, AddressKind::kPhysical);
  RegisterFile regs = reader->InitialRegisters()[0].second;
  EXPECT_EQ(regs.u64(Id("rax")), 0xff000000000000aaull);
  EXPECT_EQ(regs.u64(Id("eflags")), 0u);
  Event e;
  auto next = [&]() {
    auto more = reader->Next(&e);
    EXPECT_TRUE(more.ok() && *more) << more.status().ToString();
    for (const RegisterWrite& w : e.registers) regs.Apply(w);
  };
  next();  // 0
  ASSERT_EQ(e.registers.size(), 2u);
  EXPECT_EQ(e.kind, EventKind::kInstruction);
  EXPECT_EQ(e.thread, ThreadId(1));
  EXPECT_EQ(regs.u64(Id("rax")), 0xffaabbccddeeffaaull);
  EXPECT_EQ(regs.u64(Id("eflags")), 0xffaabbddu);
  next();  // 1: 3-byte id escape
  ASSERT_EQ(e.registers.size(), 1u);
  EXPECT_EQ(e.registers[0].reg, Id("rax"));
  next();  // 2: "other" event
  EXPECT_EQ(e.kind, EventKind::kMarker);
  EXPECT_EQ(e.description, "event!");
  EXPECT_EQ(regs.u64(Id("eflags")), 0xeeffaa00u);
  next();  // 3: memory then register
  ASSERT_EQ(e.writes.size(), 1u);
  EXPECT_EQ(e.writes[0].address, 0x42u);
  EXPECT_EQ(testing::DescribeEvent(e), "instruction t1 W0x42=ccbbaaff Reflags/0=eebbaaff");
  next();  // 4: length escape
  ASSERT_EQ(e.writes.size(), 1u);
  EXPECT_EQ(e.writes[0].address, 0x48u);
  EXPECT_EQ(e.writes[0].data.size(), 8u);
  EXPECT_EQ(e.writes[0].data[0], 0xff);
  EXPECT_EQ(e.writes[0].data[7], 0xaa);
  next();  // 5: SET operation
  EXPECT_EQ(regs.u64(Id("eflags")), 0x11333377u);
  EXPECT_EQ(regs.u64(Id("rax")), 0xffddbbccddeeffaaull);
  next();  // 6: ADD wraps
  ASSERT_EQ(e.registers.size(), 2u);
  EXPECT_EQ(e.registers[1].op, RegisterOp::kAdd);
  EXPECT_EQ(Value(e.registers[1]), 0xfffefffeu);
  EXPECT_EQ(regs.u64(Id("eflags")), static_cast<std::uint32_t>(0x10a02201u + 0xfffefffeu));
  next();  // 7: AND
  EXPECT_EQ(regs.u64(Id("eflags")), 0xf0f00f0fu & 0xaa55aa55u);
  next();  // 8: OR
  EXPECT_EQ(regs.u64(Id("eflags")), 0x0f0ff0f0u | 0x55aa55aau);
  next();  // 9: ADD on rax
  EXPECT_EQ(regs.u64(Id("rax")), 0x0000000082621635ull + 0x15);
  next();  // 10: empty diff
  EXPECT_TRUE(e.registers.empty());
  EXPECT_TRUE(e.writes.empty());
  next();  // 11: register continuation
  EXPECT_EQ(e.writes.size(), 2u);
  EXPECT_EQ(e.registers.size(), 15u);
  EXPECT_EQ(e.writes[1].address, 0x46u);
  EXPECT_EQ(regs.u64(Id("eflags")), 0xddeeffccu);
  next();  // 12: memory continuation
  EXPECT_EQ(e.writes.size(), 15u);
  EXPECT_EQ(e.registers.size(), 2u);
  EXPECT_EQ(regs.u64(Id("eflags")), 0xddeeffddu);
  auto end = reader->Next(&e);
  ASSERT_TRUE(end.ok());
  EXPECT_FALSE(*end);
}

TEST(RevenReaderTest, ReferenceExampleHeaderAndMemory) {
  auto reader = OpenBytes(ReferenceExample());
  ASSERT_NE(reader, nullptr);
  const TraceHeader& h = reader->header();
  EXPECT_EQ(h.format, "reven");
  EXPECT_EQ(h.arch, &X86_64());
  ASSERT_EQ(h.regions.size(), 1u);
  EXPECT_EQ(h.regions[0].start, 0u);
  EXPECT_EQ(h.regions[0].size, 8u);
  std::uint8_t out[12], known[12];
  reader->ReadInitialMemory(0, out, known);
  EXPECT_EQ(out[0], 0x14);
  EXPECT_EQ(out[7], 0x01);
  EXPECT_EQ(known[7], 1);
  EXPECT_EQ(known[8], 0);
  EXPECT_EQ(out[8], 0);
  auto prop = [&](std::string_view key) {
    for (const auto& [k, v] : h.properties) {
      if (k == key) return v;
    }
    return std::string("<none>");
  };
  EXPECT_EQ(prop("tool name"), "panda");
  EXPECT_EQ(prop("tool version"), "1.2.3");
  EXPECT_EQ(prop("format version"), "1.0.1");
  EXPECT_EQ(prop("unmapped registers"), "<none>");
}

TEST(RevenReaderTest, LegacyMetadataVersion0) {
  auto reader = OpenBytes(ReferenceExample(/*metadata_version=*/0));
  ASSERT_NE(reader, nullptr);
  EXPECT_EQ(reader->metadata().metadata_version, 0u);
  EXPECT_EQ(reader->metadata().tool_name, "panda");
  EXPECT_EQ(reader->metadata().tool_version, "");
  auto replay = testing::ReplayReader(*reader);
  ASSERT_TRUE(replay.ok()) << replay.status().ToString();
  EXPECT_EQ(replay->events, 13u);
}

TEST(RevenReaderTest, TellSeekResumesMidStream) {
  auto reader = OpenBytes(ReferenceExample());
  ASSERT_NE(reader, nullptr);
  std::vector<ReaderPosition> positions;
  std::vector<std::string> events;
  Event e;
  for (;;) {
    positions.push_back(reader->Tell());
    auto more = reader->Next(&e);
    ASSERT_TRUE(more.ok());
    if (!*more) break;
    events.push_back(testing::DescribeEvent(e));
  }
  ASSERT_EQ(events.size(), 13u);
  EXPECT_EQ(positions[0].aux, 0u);
  EXPECT_EQ(positions[0].offset, reader->events_payload_offset() + 8);
  for (std::size_t i = events.size(); i-- > 0;) {
    ASSERT_TRUE(reader->Seek(positions[i]).ok());
    ASSERT_TRUE(reader->Next(&e).ok());
    EXPECT_EQ(testing::DescribeEvent(e), events[i]) << "event " << i;
    EXPECT_EQ(reader->Tell(), positions[i + 1]);
  }
  EXPECT_FALSE(reader->Seek({1, 0}).ok());
  EXPECT_FALSE(reader->Seek({positions[0].offset, 14}).ok());
}

TEST(RevenReaderTest, MetadataSizes) {
  for (std::uint32_t version : {0u, 1u}) {
    RevenBytes b;
    testing::AppendHandMetadata(b, version);
    ByteReader r(b.bytes());
    auto md = ParseRevenMetadata(r, "md.bin", kRevenResourceTraceBin);
    ASSERT_TRUE(md.ok()) << md.status().ToString();
    EXPECT_EQ(r.offset(), version == 0 ? kRevenMetadataSizeV0 : kRevenMetadataSizeV1);
    EXPECT_EQ(md->tool_info, "hand made - using rvnbintrace 1.0.1");
    std::vector<std::uint8_t> ours;
    ASSERT_TRUE(AppendRevenMetadata(*md, &ours).ok());
    EXPECT_EQ(ours, b.bytes());  // our encoder agrees with the hand-built bytes
  }
}

TEST(RevenReaderTest, ClassifiesOtherEvents) {
  using D = RevenEventDecoder;
  EXPECT_EQ(D::Classify("interrupt 128"), EventKind::kInterrupt);
  EXPECT_EQ(D::Classify("hw interrupt 32"), EventKind::kInterrupt);
  EXPECT_EQ(D::Classify("page fault"), EventKind::kException);
  EXPECT_EQ(D::Classify("general protection with error code 0"), EventKind::kException);
  EXPECT_EQ(D::Classify("nmi interrupt"), EventKind::kException);
  EXPECT_EQ(D::Classify("debugger"), EventKind::kMarker);
  EXPECT_EQ(D::Classify("event!"), EventKind::kMarker);
}

}  // namespace
}  // namespace backstep::core
