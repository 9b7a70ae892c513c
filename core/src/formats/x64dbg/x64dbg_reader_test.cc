// The reader against hand-built bytes (docs/formats/x64dbg.md §5), sharing no code with
// the writer or the block encoder: relative slot indexing, old/new values,
// the thread-id flag and x64dbg's thread-flag quirk, thread switches (one
// position per block), the PUSH stack-slot rule, the end of the trace, and a full dump's slot map
// (selectors packed in one slot, the x87 area in ST order, LastError).
#include "formats/x64dbg/x64dbg_reader.h"

#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

namespace backstep::core {
namespace {

struct Bytes {
  std::vector<std::uint8_t> b;
  Bytes& Le(std::uint64_t v, int n) {
    for (int i = 0; i < n; ++i) b.push_back(static_cast<std::uint8_t>(v >> (8 * i)));
    return *this;
  }
  Bytes& U8(std::uint64_t v) { return Le(v, 1); }
  Bytes& Q(std::uint64_t v) { return Le(v, 8); }
};

Bytes Header() {
  const std::string json = R"({"ver":1,"arch":"x64"})";
  Bytes h;
  h.b = {'T', 'R', 'A', 'C'};
  h.Le(json.size(), 4);
  h.b.insert(h.b.end(), json.begin(), json.end());
  return h;
}

RegisterId Id(const char* name) { return *X86_64().Find(name); }

std::uint64_t Value(const Event& e, const char* name) {
  for (const RegisterWrite& w : e.registers) {
    if (w.reg == Id(name)) {
      std::uint64_t v = 0;
      std::memcpy(&v, w.value, std::min<std::size_t>(8, X86_64().info(w.reg).size));
      return v;
    }
  }
  ADD_FAILURE() << "no write of " << name;
  return 0;
}

std::string Accesses(const std::vector<MemoryAccess>& list) {
  std::string out;
  for (const MemoryAccess& a : list) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%llx:", static_cast<unsigned long long>(a.address));
    out += buf;
    for (std::uint8_t x : a.data) std::snprintf(buf, sizeof buf, "%02x", x), out += buf;
    out += " ";
  }
  return out;
}

TEST(X64dbgReaderTest, HandBuiltBlocks) {
  Bytes f = Header();
  // Block 0: thread 0x10, nop, rax (slot 0), rip (slot 0+1+15), rflags (16+1+0); one
  // changed memory entry.
  f.U8(0).U8(3).U8(1).U8(0x81).Le(0x10, 4).U8(0x90);
  f.U8(0).U8(15).U8(0).Q(0x11).Q(0x1000).Q(0x246);
  f.U8(0).Q(0x2000).Q(0x1111111111111111).Q(0x2222222222222222);
  // Block 1: bit 7 again (same thread; the block before a switch, as x64dbg
  // writes it), rip only.
  f.U8(0).U8(1).U8(0).U8(0x81).Le(0x10, 4).U8(0x90).U8(16).Q(0x1001);
  // Block 2: thread 0xf020 with its id but bit 7 clear (the quirk; without
  // the id, its byte 0xf0 would be a slot beyond 172), push rax.
  f.U8(0).U8(1).U8(1).U8(0x01).Le(0xf020, 4).U8(0x50).U8(16).Q(0x3000);
  f.U8(0).Q(0x7000).Q(0xdead).Q(0x11);
  // Block 3: same thread, an unchanged entry (a read), rip.
  f.U8(0).U8(1).U8(1).U8(0x01).U8(0x58).U8(16).Q(0x3001);
  f.U8(1).Q(0x7000).Q(0x11);
  auto r = X64dbgReader::Open(MemorySource(f.b, "hand.trace64"));
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  X64dbgReader& reader = **r;
  auto initial = reader.InitialRegisters();
  ASSERT_EQ(initial.size(), 2u);
  EXPECT_EQ(initial[0].first, ThreadId(0x10));
  const RegisterFile& regs = initial[0].second;
  EXPECT_EQ(regs.u64(Id("rax")), 0x11u);
  EXPECT_EQ(regs.u64(Id("rip")), 0x1000u);
  EXPECT_EQ(regs.u64(Id("eflags")), 0x246u);
  EXPECT_FALSE(regs.known(Id("rbx")));
  EXPECT_FALSE(regs.known(Id("r8")));
  // Thread 0xf020 has not run yet: the dump at its first block (rax and
  // rflags inherited from thread 0x10's block, rip its own).
  EXPECT_EQ(initial[1].first, ThreadId(0xf020));
  EXPECT_EQ(initial[1].second.u64(Id("rip")), 0x3000u);
  EXPECT_EQ(initial[1].second.u64(Id("rax")), 0x11u);

  std::vector<Event> events;
  std::vector<ReaderPosition> at;
  Event e;
  while (true) {
    at.push_back(reader.Tell());
    auto more = reader.Next(&e);
    ASSERT_TRUE(more.ok()) << more.status().ToString();
    if (!*more) break;
    Event copy = e;  // spans view the source, which outlives the test
    events.push_back(copy);
  }
  ASSERT_EQ(events.size(), 4u);  // one per block, as x64dbg numbers them
  // Block 0: old value read, new value written, then block 1's rip.
  EXPECT_EQ(events[0].thread, ThreadId(0x10));
  EXPECT_EQ(Accesses(events[0].reads), "1000:90 2000:1111111111111111 ");
  EXPECT_EQ(Accesses(events[0].writes), "2000:2222222222222222 ");
  EXPECT_EQ(events[0].flags, 0u);
  ASSERT_EQ(events[0].registers.size(), 1u);
  EXPECT_EQ(Value(events[0], "rip"), 0x1001u);
  // Block 1: the next block is another thread's, and thread 0x10 does not
  // run again: its state after it is unknown.
  EXPECT_EQ(events[1].flags, std::uint32_t{kEventClearsRegisters});
  EXPECT_TRUE(events[1].registers.empty());
  // push rax, thread 0xf020's first block: the stack slot's old value is not
  // a read; its value after is a write; every register the dump knows.
  EXPECT_EQ(events[2].kind, EventKind::kInstruction);
  EXPECT_EQ(events[2].thread, ThreadId(0xf020));
  EXPECT_EQ(Accesses(events[2].reads), "3000:50 ");
  EXPECT_EQ(Accesses(events[2].writes), "7000:1100000000000000 ");
  EXPECT_EQ(events[2].flags, std::uint32_t{kEventClearsRegisters});
  EXPECT_EQ(events[2].registers.size(), 3u);
  EXPECT_EQ(Value(events[2], "rip"), 0x3001u);
  EXPECT_EQ(Value(events[2], "rax"), 0x11u);
  // pop: an unchanged entry is a read. The last block, without bit 7: the
  // slots it does not list (rax, rflags) stay known, rip (listed) does not.
  EXPECT_EQ(Accesses(events[3].reads), "3001:58 7000:1100000000000000 ");
  EXPECT_TRUE(events[3].writes.empty());
  EXPECT_EQ(events[3].flags, std::uint32_t{kEventClearsRegisters});
  ASSERT_EQ(events[3].registers.size(), 2u);
  EXPECT_EQ(Value(events[3], "rax"), 0x11u);
  EXPECT_EQ(Value(events[3], "eflags"), 0x246u);
  // Every Tell() resumes to the same event, in any order.
  for (std::size_t i : {3u, 2u, 0u, 1u}) {
    ASSERT_TRUE(reader.Seek(at[i]).ok());
    ASSERT_TRUE(*reader.Next(&e));
    EXPECT_EQ(e.thread, events[i].thread) << i;
    EXPECT_EQ(e.kind, events[i].kind) << i;
    EXPECT_EQ(Accesses(e.reads), Accesses(events[i].reads)) << i;
    EXPECT_EQ(e.registers.size(), events[i].registers.size()) << i;
  }
  EXPECT_FALSE(reader.Seek({at[1].offset + 1, at[1].aux}).ok());
}

TEST(X64dbgReaderTest, FullDumpSlotMap) {
  Bytes f = Header();
  f.U8(0).U8(172).U8(0).U8(0x81).Le(0x44, 4).U8(0x90);
  for (int i = 0; i < 172; ++i) f.U8(0);
  std::vector<std::uint64_t> slots(172);
  for (int s = 0; s < 172; ++s) slots[s] = 0x1000 + s;
  slots[18] = 0x002b'0053'002b'0063;  // gs 0x63 fs 0x2b es 0x53 ds 0x2b
  slots[19] = 0x0000'0000'002b'0033;  // cs, ss
  for (int s = 26; s < 36; ++s) {     // RegisterArea bytes 0..79 = their index
    slots[s] = 0;
    for (int i = 0; i < 8; ++i) slots[s] |= std::uint64_t((s - 26) * 8 + i) << (8 * i);
  }
  slots[36] = 0x0000'3fff'2800'037fULL;   // fctrl 0x37f, fstat TOP=5, ftag 0x3fff
  slots[39] = 0x0000'1f80'0000'0000ULL;   // Cr0NpxState 0, MxCsr 0x1f80
  slots[171] = 0x0000'00b7'0000'0000ULL;  // LastError 183
  for (std::uint64_t v : slots) f.Q(v);
  auto r = X64dbgReader::Open(MemorySource(f.b, "full.trace64"));
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  const RegisterFile regs = (*r)->InitialRegisters().at(0).second;
  EXPECT_EQ(regs.u64(Id("rax")), 0x1000u);
  EXPECT_EQ(regs.u64(Id("rcx")), 0x1001u);
  EXPECT_EQ(regs.u64(Id("rbx")), 0x1003u);
  EXPECT_EQ(regs.u64(Id("r15")), 0x100fu);
  EXPECT_EQ(regs.u64(Id("rip")), 0x1010u);
  EXPECT_EQ(regs.u64(Id("gs")), 0x63u);
  EXPECT_EQ(regs.u64(Id("fs")), 0x2bu);
  EXPECT_EQ(regs.u64(Id("es")), 0x53u);
  EXPECT_EQ(regs.u64(Id("cs")), 0x33u);
  EXPECT_EQ(regs.u64(Id("ss")), 0x2bu);
  EXPECT_EQ(regs.u64(Id("dr7")), 0x1000u + 25);
  EXPECT_EQ(regs.u64(Id("fstat")), 0x2800u);
  EXPECT_EQ(regs.u64(Id("ftag")), 0x3fffu);
  EXPECT_EQ(regs.u64(Id("mxcsr")), 0x1f80u);
  EXPECT_EQ(regs.u64(Id("lasterror")), 183u);
  // Physical R_j = area[((j - TOP) & 7) * 10]: R5 = ST0 = area bytes 0..9.
  for (int j = 0; j < 8; ++j) {
    const int st = (j - 5) & 7;
    auto b = regs.bytes(Id(("fpr" + std::to_string(j)).c_str()));
    EXPECT_EQ(b[0], st * 10) << j;
    EXPECT_EQ(b[9], st * 10 + 9) << j;
  }
  // gdb's st0 is ST(0) = R[TOP].
  std::uint8_t st0[10];
  ASSERT_TRUE(regs.Read(Id("st0"), st0));
  EXPECT_EQ(st0[0], 0);
  // xmm1 = slots 42-43; ymm1h = slots 78-79 (ymm1 = 76..79).
  auto xmm1 = regs.bytes(Id("xmm1"));
  EXPECT_EQ(xmm1[0], 0x2a);  // slot 42 = 0x102a
  EXPECT_EQ(xmm1[8], 0x2b);
  auto ymm1h = regs.bytes(Id("ymm1h"));
  EXPECT_EQ(ymm1h[0], 0x4e);  // slot 78 = 0x104e
  // The full dump is block 0: no resume point at position 0.
  EXPECT_TRUE((*r)->ResumePoints().empty());
}

}  // namespace
}  // namespace backstep::core
