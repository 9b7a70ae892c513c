// The REVEN register mapping: PANDA's and Bochs' machines as the producers
// declare them, their x87 conventions, and the writer direction.
#include "formats/reven/reven_registers.h"

#include <gtest/gtest.h>

#include "backstep/testing/reven_fixtures.h"
#include "formats/reven/reven_reader.h"
#include "formats/reven/reven_writer.h"
#include "testing/reven_machines.h"

namespace backstep::core {
namespace {

namespace panda = testing::panda;

RegisterId Id(std::string_view name) { return *X86_64().Find(name); }

std::vector<std::uint8_t> Le(std::uint64_t v, std::size_t n) {
  std::vector<std::uint8_t> out(n);
  for (std::size_t i = 0; i < n && i < 8; ++i) out[i] = static_cast<std::uint8_t>(v >> (8 * i));
  return out;
}

std::uint16_t FindId(const RevenMachine& m, std::string_view name) {
  for (const RevenRegisterDecl& r : m.registers) {
    if (r.name == name) return r.id;
  }
  ADD_FAILURE() << name;
  return 0;
}

// A trace of `m` whose initial registers are 0 except `initial`, then one
// event per element of `events` (REVEN id -> value SETs).
using Sets = std::vector<std::pair<std::uint16_t, std::uint64_t>>;
std::unique_ptr<RevenReader> Trace(const RevenMachine& m, const Sets& initial,
                                   const std::vector<Sets>& events) {
  auto w = RevenWriter::CreateMemory(m);
  w->WriteInitialMemory(std::vector<std::uint8_t>(m.TotalMemory()));
  for (const RevenRegisterDecl& r : m.registers) {
    std::uint64_t v = 0;
    for (auto [id, value] : initial) v = id == r.id ? value : v;
    w->WriteInitialRegister(r.id, Le(v, r.size));
  }
  for (const Sets& sets : events) {
    w->BeginInstruction();
    for (auto [id, value] : sets) {
      std::size_t size = 0;
      for (const RevenRegisterDecl& r : m.registers) size = r.id == id ? r.size : size;
      w->WriteRegister(id, Le(value, size));
    }
    w->EndEvent();
  }
  EXPECT_TRUE(w->Finish().ok());
  auto r = RevenReader::Open(MemorySource(w->TakeBytes(), "regs.bin"));
  EXPECT_TRUE(r.ok()) << r.status().ToString();
  return r.ok() ? std::move(*r) : nullptr;
}

bool HasUnmapped(const TraceHeader& h) {
  for (const auto& [k, v] : h.properties) {
    if (k == "unmapped registers") return true;
  }
  return false;
}

TEST(RevenRegistersTest, PandaX87TopStatusAndTags) {
  const RevenMachine m = testing::PandaRevenMachine(5, {{0, 0x1000}});
  ASSERT_EQ(m.registers.size(), 228u - 41u);  // ids 0..227 minus 41 operations
  auto r = Trace(m,
                 {{panda::kTop, 3},
                  {panda::kX87Status, 0x4100 | 0x3800},  // stray TOP bits are ignored
                  {panda::kX87Tags, 0x09},
                  {panda::kX87r0 + 3, 0x3333}},
                 {{{panda::kTop, 5}},
                  {{panda::kX87Status, 0x0200}},
                  {{panda::kX87Status, 0x0100}, {panda::kTop, 1}},
                  {{panda::kTop, 2}, {panda::kX87Status, 0x4000}}});
  ASSERT_NE(r, nullptr);
  EXPECT_FALSE(HasUnmapped(r->header()));
  RegisterFile regs = r->InitialRegisters()[0].second;
  EXPECT_EQ(regs.u64(Id("fstat")), 0x4100u | (3u << 11));
  EXPECT_EQ(regs.u64(Id("ftag")), 0xff3cu);  // R0 and R3 valid (00), the rest empty (11)
  std::uint8_t st0[10];
  ASSERT_TRUE(regs.Read(Id("st0"), st0));  // ST(0) = R[TOP] = R3
  EXPECT_EQ(st0[0], 0x33);
  const std::uint64_t expected[] = {0x4100u | (5u << 11), 0x0200u | (5u << 11),
                                    0x0100u | (1u << 11), 0x4000u | (2u << 11)};
  Event e;
  for (std::uint64_t want : expected) {
    ASSERT_TRUE(*r->Next(&e));
    for (const RegisterWrite& w : e.registers) regs.Apply(w);
    EXPECT_EQ(regs.u64(Id("fstat")), want);
  }
}

TEST(RevenRegistersTest, BochsX87AndAliases) {
  const RevenMachine m = testing::BochsRevenMachine({{0, 0x1000}});
  ASSERT_EQ(m.registers.size(), 142u);
  ASSERT_EQ(m.operations.size(), 41u);
  ASSERT_EQ(m.operations.front().id, testing::kBochsFirstOperation);
  auto r = Trace(m,
                 {{FindId(m, "x87status"), 0x3a00},
                  {FindId(m, "x87tags"), 0x3fff},
                  {FindId(m, "x87r7"), 0x77},
                  {FindId(m, "x87control"), 0x37f},
                  {FindId(m, "x87lastip"), 0x1122334455667788},
                  {FindId(m, "msr_c0000100"), 0xf5f5},
                  {FindId(m, "msr_c0000080"), 0xd01},
                  {FindId(m, "cs"), 0x33}},
                 {});
  ASSERT_NE(r, nullptr);
  EXPECT_FALSE(HasUnmapped(r->header()));
  const RegisterFile regs = r->InitialRegisters()[0].second;
  EXPECT_EQ(regs.u64(Id("fstat")), 0x3a00u);  // TOP = 7, as is
  EXPECT_EQ(regs.u64(Id("ftag")), 0x3fffu);
  std::uint8_t st0[10];
  ASSERT_TRUE(regs.Read(Id("st0"), st0));
  EXPECT_EQ(st0[0], 0x77);
  EXPECT_EQ(regs.u64(Id("fctrl")), 0x37fu);
  EXPECT_EQ(regs.u64(Id("fioff")), 0x55667788u);  // low 4 bytes
  EXPECT_EQ(regs.u64(Id("fs_base")), 0xf5f5u);
  EXPECT_EQ(regs.u64(Id("efer")), 0xd01u);
  EXPECT_EQ(regs.u64(Id("cs")), 0x33u);
}

TEST(RevenRegistersTest, MappingTable) {
  using C = RevenConversion;
  EXPECT_EQ(MapRevenRegister("rax", 8, false).conversion, C::kDirect);
  EXPECT_EQ(MapRevenRegister("x87r3", 10, false).target[0], Id("fpr3"));
  EXPECT_EQ(MapRevenRegister("msr_c0000101", 8, false).target[0], Id("gs_base"));
  EXPECT_EQ(MapRevenRegister("gs", 2, false).conversion, C::kResize);
  EXPECT_EQ(MapRevenRegister("x87lastdp", 8, true).target[0], Id("fooff"));
  EXPECT_EQ(MapRevenRegister("x87status", 2, true).conversion, C::kStatusNoTop);
  EXPECT_EQ(MapRevenRegister("x87status", 2, false).conversion, C::kResize);
  EXPECT_EQ(MapRevenRegister("x87tags", 2, true).conversion, C::kTagMask);
  EXPECT_EQ(MapRevenRegister("top", 1, true).conversion, C::kTop);
  const RevenRegisterMapping zmm = MapRevenRegister("zmm31", 64, false);
  EXPECT_EQ(zmm.conversion, C::kZmm);
  EXPECT_EQ(zmm.target[0], Id("xmm31"));
  EXPECT_EQ(zmm.target[2], Id("zmm31h"));
  for (const char* unknown : {"zmm32", "zmm05", "st0", "eax", "", "msr_12345678"}) {
    EXPECT_EQ(MapRevenRegister(unknown, 8, false).conversion, C::kUnmapped) << unknown;
  }
}

TEST(RevenRegistersTest, ExportListMapsBackToEveryStorageRegister) {
  std::vector<int> covered(X86_64().register_count(), 0);
  for (const RevenExportRegister& e : RevenExportRegisters()) {
    const RevenRegisterMapping back = MapRevenRegister(e.name, e.size, false);
    EXPECT_NE(back.conversion, RevenConversion::kUnmapped) << e.name;
    EXPECT_EQ(back.conversion, e.mapping.conversion) << e.name;
    for (RegisterId t : back.target) {
      if (t != kNoRegister) ++covered[t];
    }
  }
  for (std::size_t i = 0; i < covered.size(); ++i) {
    const RegisterInfo& info = X86_64().info(static_cast<RegisterId>(i));
    EXPECT_EQ(covered[i], info.derived ? 0 : 1) << info.name;
  }
}

TEST(RevenRegistersTest, EncodeThenDecodeKeepsWhatRevenHolds) {
  // Bytes of each canonical register that its REVEN counterpart holds.
  std::vector<std::size_t> held(X86_64().register_count(), 0);
  for (const RevenExportRegister& e : RevenExportRegisters()) {
    for (RegisterId t : e.mapping.target) {
      if (t != kNoRegister) held[t] = std::min<std::size_t>(X86_64().info(t).size, e.size);
    }
  }
  EXPECT_EQ(held[Id("fctrl")], 2u);  // x87control is 2 bytes
  EXPECT_EQ(held[Id("fioff")], 4u);  // x87lastip is 8
  EXPECT_EQ(held[Id("zmm7h")], 32u);
  RegisterFile file(X86_64());
  for (std::size_t i = 0; i < X86_64().register_count(); ++i) {
    const auto id = static_cast<RegisterId>(i);
    if (X86_64().info(id).derived) continue;
    std::vector<std::uint8_t> v(X86_64().info(id).size);
    for (std::size_t k = 0; k < v.size(); ++k) v[k] = static_cast<std::uint8_t>(i * 13 + k + 1);
    file.Set(id, v);
  }
  RegisterFile back(X86_64());
  std::vector<RegisterWrite> writes;
  std::uint8_t value[64];
  for (const RevenExportRegister& e : RevenExportRegisters()) {
    EncodeRevenValue(e, file, value);
    AppendRevenValue(e.mapping, std::span<const std::uint8_t>(value, e.size), &writes);
  }
  for (const RegisterWrite& w : writes) back.Apply(w);
  for (std::size_t i = 0; i < X86_64().register_count(); ++i) {
    const auto id = static_cast<RegisterId>(i);
    const RegisterInfo& info = X86_64().info(id);
    if (info.derived) continue;
    ASSERT_TRUE(back.known(id)) << info.name;
    for (std::size_t k = 0; k < info.size; ++k) {
      EXPECT_EQ(back.bytes(id)[k], k < held[i] ? file.bytes(id)[k] : 0) << info.name << " " << k;
    }
  }
}

}  // namespace
}  // namespace backstep::core

namespace backstep::core {
namespace {

TEST(RevenRegistersTest, SmallProducerTracesDecode) {
  for (bool panda : {true, false}) {
    SCOPED_TRACE(panda ? "panda" : "bochs");
    auto r = RevenReader::Open(MemorySource(testing::SmallProducerTrace(panda), "producer.bin"));
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    auto replay = testing::ReplayReader(**r);
    ASSERT_TRUE(replay.ok()) << replay.status().ToString();
    EXPECT_EQ(replay->events, 7u);
    const RegisterFile& regs = replay->registers[0].second;
    EXPECT_EQ(regs.u64(Id("rip")), 0x1000u + 6 * 3);
    EXPECT_EQ(regs.u64(Id("rsp")), 0x10f0u - 6 * 8);
    EXPECT_EQ(regs.u64(Id("eflags")), 0x1u | 0x4 | 0x10 | 0x40 | 0x80 | 0x100);
    EXPECT_EQ((regs.u64(Id("fstat")) >> 11) & 7, 2u);  // TOP after six pushes
    std::uint8_t st0[10];
    ASSERT_TRUE(regs.Read(Id("st0"), st0));
    EXPECT_EQ(st0[0], 0x05);  // the last value pushed
    EXPECT_EQ(regs.u64(Id("cr2")), 0xdead000u);
  }
}

}  // namespace
}  // namespace backstep::core
