// Hand-built UCIR bytes, written from docs/formats/usercorn.md §2 without the writer:
// every op, read back field by field; and the writer's bytes compared with
// them, so that the reader and the writer cannot share a misreading of the
// spec (big-endian version, u64 MAP/UNMAP/PROT sizes, u32 syscall number,
// u16 syscall op count, masked CRCs).
#include <gtest/gtest.h>

#include "formats/usercorn/usercorn_test_util.h"
#include "formats/usercorn/usercorn_writer.h"
#include "testing/usercorn_fixtures.h"

namespace backstep::core {
namespace {

using testing::UcirBytes;
using usercorn_test::OpenBytes;
using usercorn_test::ReadAll;

constexpr std::uint8_t kXmm[16] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15};

// Every op, by hand. Comments give the op and its fields.
std::vector<std::uint8_t> HandOps() {
  UcirBytes b;
  b.U8(2).U64(0).U32(5);                    // KEYFRAME pid 0, 5 ops
  b.U8(5).U16(35).U64(0x1122334455667788);  //   REG rax
  b.U8(5).U16(250).U64(0x7ff000);           //   REG fs_base
  b.U8(9).U64(0x1000).U64(0x2000).U8(5);    //   MEM_MAP 0x1000 +0x2000 r-x
  b.U64(0x10).U64(0x2000).U16(4).U16(5).Str("text").Str("a.out");
  b.U8(8).U64(0x1004).U32(3).U8(0xaa).U8(0xbb).U8(0xcc);  //   MEM_WRITE
  b.U8(10).U64(0x2000).U64(0x1000);                       //   MEM_UNMAP the upper half
  b.U8(1).U64(0).U32(10);                                 // FRAME pid 0, 10 ops
  b.U8(3).U64(0x1000).U32(0x10);                          //   JMP 0x1000 (initial pc)
  b.U8(7).U64(0x1004).U32(2);                             //   MEM_READ
  b.U8(8).U64(0x1008).U32(2).U8(1).U8(2);                 //   MEM_WRITE
  b.U8(5).U16(44).U64(0x8000);                            //   REG rsp
  b.U8(6).U16(122).U16(16).Bytes(kXmm);                   //   SPREG xmm0
  b.U8(4).U8(5);                                          //   STEP 5: event 0
  b.U8(12).U32(0x10101).U64(0xfffffffffffffffe).U8(2).U16(4).U64(3).U64(0x1000);  // SYSCALL
  b.U8(9).U64(0x3000).U64(0x100).U8(3).U64(0).U64(0).U16(0).U16(0);               //     MEM_MAP
  b.U8(11).U64(0x3000).U64(0x100000000).U8(1);  //     MEM_PROT (u64 size)
  b.U8(8).U64(0x3000).U32(1).U8(0x55);          //     MEM_WRITE
  b.U8(5).U16(35).U64(5);                       //     REG rax
  b.U8(0);                                      //   NOP
  b.U8(3).U64(0x1100).U32(4);                   //   JMP 0x1100: event 0 went there
  b.U8(4).U8(2);                                //   STEP 2: event 1
  b.U8(13);                                     // EXIT (top level)
  return std::move(b.bytes());
}

TEST(UsercornBytesTest, EveryOpReadsBackFromHandBuiltBytes) {
  for (const bool compressed : {false, true}) {
    for (const std::size_t chunk : {5u, 65536u}) {
      SCOPED_TRACE(std::to_string(chunk) + (compressed ? " compressed" : " stored"));
      testing::UcirFileSpec spec;
      spec.chunk = chunk;
      spec.compressed = compressed;
      auto r = OpenBytes(testing::HandUcirFile(HandOps(), spec));
      ASSERT_TRUE(r.ok()) << r.status().ToString();
      UsercornReader& reader = **r;
      EXPECT_EQ(reader.version(), 1u);
      EXPECT_EQ(reader.os(), "linux");
      EXPECT_EQ(reader.header().format, "usercorn");
      EXPECT_FALSE(reader.header().records_reads);
      // The unmap cut the mapping to its lower half.
      ASSERT_EQ(reader.header().regions.size(), 1u);
      EXPECT_EQ(reader.header().regions[0].start, 0x1000u);
      EXPECT_EQ(reader.header().regions[0].size, 0x1000u);
      EXPECT_EQ(reader.header().regions[0].name, "a.out");
      std::vector<std::uint8_t> mem(16), known(16);
      reader.ReadInitialMemory(0x1000, mem, known);
      EXPECT_EQ(HexBytes(mem), "00000000aabbcc000000000000000000");
      EXPECT_EQ(HexBytes(known), "01010101010101010101010101010101");
      reader.ReadInitialMemory(0x1ff8, mem, known);
      EXPECT_EQ(HexBytes(known), "01010101010101010000000000000000");

      auto threads = reader.InitialRegisters();
      ASSERT_EQ(threads.size(), 1u);
      EXPECT_EQ(threads[0].first, ThreadId(1));  // pid 0
      const RegisterFile& regs = threads[0].second;
      const ArchDescription& a = X86_64();
      EXPECT_EQ(regs.u64(*a.Find("rax")), 0x1122334455667788u);
      EXPECT_EQ(regs.u64(*a.Find("fs_base")), 0x7ff000u);
      EXPECT_EQ(regs.u64(*a.Find("rip")), 0x1000u);
      EXPECT_TRUE(regs.known(*a.Find("r15")));  // tracked: 0 unless set
      EXPECT_EQ(regs.u64(*a.Find("r15")), 0u);
      EXPECT_FALSE(regs.known(*a.Find("eflags")));  // optional, not set
      EXPECT_FALSE(regs.known(*a.Find("gs_base")));

      const std::vector<std::string> events = ReadAll(reader);
      const std::vector<std::string> expected = {
          "instruction t1 \"syscall 65793(0x3, 0x1000) = 0xfffffffffffffffe; map 0x3000+0x100 "
          "rw-; protect 0x3000+0x100000000 r--\" W0x1008=0102 W0x3000=256B#0x0 W0x3000=55 "
          "rsp=0x8000 xmm0=000102030405060708090a0b0c0d0e0f rax=0x5 rip=0x1100",
          "instruction t1 rip+=0x2",
          "marker t1 \"exit\"",
      };
      EXPECT_EQ(events, expected);
    }
  }
}

// The same ops through UsercornWriter's op level.
std::vector<std::uint8_t> WriterOps(SnappyChunkMode mode, std::size_t chunk) {
  UsercornWriterOptions o;
  o.chunk_mode = mode;
  o.chunk_size = chunk;
  auto w = UsercornWriter::CreateMemory(o);
  w->BeginKeyframe(0);
  w->Reg(35, 0x1122334455667788);
  w->Reg(250, 0x7ff000);
  w->MemMap({0x1000, 0x2000, 5, 0x10, 0x2000, "text", "a.out"});
  const std::uint8_t abc[] = {0xaa, 0xbb, 0xcc}, d[] = {1, 2}, x = 0x55;
  w->MemWrite(0x1004, abc);
  w->MemUnmap(0x2000, 0x1000);
  w->EndFrame();
  w->BeginFrame(0);
  w->Jmp(0x1000, 0x10);
  w->MemRead(0x1004, 2);
  w->MemWrite(0x1008, d);
  w->Reg(44, 0x8000);
  w->SpReg(122, kXmm);
  w->Step(5);
  const std::uint64_t args[] = {3, 0x1000};
  w->BeginSyscall(0x10101, 0xfffffffffffffffe, args);
  w->MemMap({0x3000, 0x100, 3, 0, 0, "", ""});
  w->MemProt(0x3000, 0x100000000, 1);
  w->MemWrite(0x3000, std::span<const std::uint8_t>(&x, 1));
  w->Reg(35, 5);
  w->EndSyscall();
  w->Nop();
  w->Jmp(0x1100, 4);
  w->Step(2);
  w->EndFrame();
  w->Exit();
  EXPECT_TRUE(w->Finish().ok());
  return w->TakeBytes();
}

TEST(UsercornBytesTest, WriterProducesTheHandBuiltBytes) {
  for (const bool compressed : {false, true}) {
    for (const std::size_t chunk : {5u, 64u, 65536u}) {
      SCOPED_TRACE(std::to_string(chunk) + (compressed ? " compressed" : " stored"));
      testing::UcirFileSpec spec;
      spec.chunk = chunk;
      spec.compressed = compressed;
      const auto mode = compressed ? SnappyChunkMode::kCompressed : SnappyChunkMode::kUncompressed;
      EXPECT_EQ(HexBytes(WriterOps(mode, chunk)), HexBytes(testing::HandUcirFile(HandOps(), spec)));
    }
  }
}

TEST(UsercornBytesTest, HeaderLayout) {
  UsercornWriterOptions o;
  o.os = "darwin";
  auto w = UsercornWriter::CreateMemory(o);
  ASSERT_TRUE(w->Finish().ok());
  const auto bytes = w->TakeBytes();
  ASSERT_EQ(bytes.size(), 74u);  // nothing written: no stream identifier either
  EXPECT_EQ(HexBytes(std::span(bytes).first(8)), "5543495200000001");  // "UCIR", BE 1
  EXPECT_EQ(std::string(bytes.begin() + 8, bytes.begin() + 14), "x86_64");
  EXPECT_EQ(bytes[14], 0);
  EXPECT_EQ(std::string(bytes.begin() + 40, bytes.begin() + 46), "darwin");
  EXPECT_EQ(bytes[72], 0);
  EXPECT_EQ(bytes[73], 0);
  EXPECT_EQ(bytes, testing::HandUcirHeader({1, "x86_64", "darwin", 0, 0}));
  // An empty stream opens as a trace with nothing in it.
  auto r = OpenBytes(bytes);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_FALSE((*r)->has_keyframe());
  EXPECT_TRUE((*r)->InitialRegisters().empty());
  EXPECT_TRUE(ReadAll(**r).empty());
}

TEST(UsercornBytesTest, MaskedCrcOfAKnownChunk) {
  // A stored chunk of "123456789": CRC-32C 0xe3069283, masked 0xc78ab0e5.
  UcirBytes ops;
  ops.Str("123456789");
  const auto framed = testing::HandSnappyFrames(ops.bytes(), 65536, false);
  EXPECT_EQ(HexBytes(framed), "ff060000734e61507059010d0000e5b08ac7313233343536373839");
}

}  // namespace
}  // namespace backstep::core
