#include "backstep/testing/reven_fixtures.h"

#include "formats/reven/reven_writer.h"
#include "testing/reven_machines.h"
#include "util/hex.h"

namespace backstep::core::testing {
namespace {

void Field(RevenBytes& b, std::string_view s, std::size_t capacity) {
  b.U64(s.size()).Str(s).Fill(capacity - s.size());
}

std::vector<std::uint8_t> Le(std::uint64_t v, int n) {
  std::vector<std::uint8_t> out(n);
  for (int i = 0; i < n && i < 8; ++i) out[i] = static_cast<std::uint8_t>(v >> (8 * i));
  return out;
}

RevenMachine SmallMachine() {
  RevenMachine m;
  m.phy_size = 2;
  m.regions = {{0x1000, 0x100}, {0x3000, 0x80}};
  m.registers = {{0, 8, "rax"},     {1, 8, "rip"},    {2, 8, "rsp"},
                 {3, 4, "eflags"},  {4, 2, "cs"},     {5, 64, "zmm1"},
                 {6, 4, "mystery"}, {7, 10, "x87r0"}, {0x101, 8, "rbx"}};
  m.operations = {{0x40, 1, 1, Le(2, 8)},      {0x41, 3, 3, Le(0x1, 4)},
                  {0x42, 3, 2, Le(~0x40u, 4)}, {0x43, 2, 0, Le(0x7000, 8)},
                  {0x44, 7, 1, Le(1, 10)},     {0x45, 6, 1, Le(1, 4)}};
  m.static_registers = {{"cpuid_max_phy_addr", std::string(1, '\x28')}};
  return m;
}

}  // namespace

void AppendHandMetadata(RevenBytes& b, std::uint32_t metadata_version, std::uint32_t type,
                        std::string_view format_version) {
  if (metadata_version == 0) {
    b.U64(0x7262696e72737263);
  } else {
    b.U64(0x72766e62696e7273).U32(metadata_version);
  }
  b.U32(type);
  Field(b, format_version, 512);
  Field(b, "panda", 512);
  if (metadata_version != 0) Field(b, "1.2.3", 512);
  Field(b, "hand made - using rvnbintrace 1.0.1", 2048);
  b.U64(1700000000);
}

std::vector<std::uint8_t> SmallRevenTrace(bool patch_event_count) {
  RevenWriterOptions options;
  options.patch_event_count = patch_event_count;
  options.metadata.tool_name = "small";
  auto w = RevenWriter::CreateMemory(SmallMachine(), options);
  std::vector<std::uint8_t> memory(0x180);
  for (std::size_t i = 0; i < memory.size(); ++i) memory[i] = static_cast<std::uint8_t>(i * 7);
  w->WriteInitialMemory(memory);
  w->WriteInitialRegister(0, Le(0x1111, 8));
  w->WriteInitialRegister(1, Le(0x1000, 8));
  w->WriteInitialRegister(2, Le(0x8000, 8));
  w->WriteInitialRegister(3, Le(0x246, 4));
  w->WriteInitialRegister(4, Le(0x33, 2));
  w->WriteInitialRegister(5, std::vector<std::uint8_t>(64, 0x55));
  w->WriteInitialRegister(6, Le(9, 4));
  const std::vector<std::uint8_t> x87{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0};
  w->WriteInitialRegister(7, x87);
  w->WriteInitialRegister(0x101, Le(0xbbbb, 8));
  // 0: plain instruction.
  w->BeginInstruction();
  w->WriteMemory(0x1010, Le(0xdeadbeef, 4));
  w->WriteRegister(0, Le(0x2222, 8));
  w->WriteOperation(0x40);
  w->EndEvent();
  // 1: an exception.
  w->BeginOther("page fault");
  w->WriteMemory(0x3000, Le(0x0102030405060708, 8));
  w->WriteRegister(2, Le(0x7ff8, 8));
  w->WriteOperation(0x41);
  w->EndEvent();
  // 2: 16 memory entries: memory-triggered continuation.
  w->BeginInstruction();
  for (int i = 0; i < 16; ++i) w->WriteMemory(0x1020 + i, Le(i, 1));
  w->WriteOperation(0x40);
  w->EndEvent();
  // 3: 3 memory + 16 register entries: register-triggered continuation.
  w->BeginInstruction();
  for (int i = 0; i < 3; ++i) w->WriteMemory(0x3010 + 2 * i, Le(0xaa00 + i, 2));
  for (int i = 0; i < 15; ++i) w->WriteRegister(0, Le(0x100 + i, 8));
  w->WriteOperation(0x40);
  w->EndEvent();
  // 4: 300 bytes (length escape), partly outside the regions.
  w->BeginInstruction();
  std::vector<std::uint8_t> big(300);
  for (std::size_t i = 0; i < big.size(); ++i) big[i] = static_cast<std::uint8_t>(0xc0 ^ i);
  w->WriteMemory(0x1000, big);
  w->WriteOperation(0x40);
  w->EndEvent();
  // 5: 3-byte register id, ADD with carry across bytes, AND, ignored op.
  w->BeginInstruction();
  w->WriteRegister(0x101, Le(0xcccc, 8));
  w->WriteOperation(0x44);
  w->WriteOperation(0x42);
  w->WriteOperation(0x45);
  w->EndEvent();
  // 6: an interrupt with an empty diff; 7: an empty instruction.
  w->BeginOther("hw interrupt 32");
  w->EndEvent();
  w->BeginInstruction();
  w->EndEvent();
  // 8: conversions (zmm, selector), an unmapped register, a SET operation,
  // a write outside every region.
  w->BeginInstruction();
  w->WriteMemory(0x9000, Le(0x77, 1));
  std::vector<std::uint8_t> zmm(64);
  for (int i = 0; i < 64; ++i) zmm[i] = static_cast<std::uint8_t>(i);
  w->WriteRegister(5, zmm);
  w->WriteRegister(4, Le(0x2b, 2));
  w->WriteRegister(6, Le(0x1234, 4));
  w->WriteOperation(0x43);
  w->EndEvent();
  Status s = w->Finish();
  (void)s;  // the fixture is valid by construction; tests check the result
  return w->TakeBytes();
}

std::vector<std::uint8_t> SmallProducerTrace(bool panda) {
  const RevenMachine m =
      panda ? PandaRevenMachine(4, {{0x1000, 0x100}}) : BochsRevenMachine({{0x1000, 0x100}});
  const std::uint8_t ops = panda ? 18 : kBochsFirstOperation;  // rip += 1, then PANDA's order
  auto id_of = [&](std::string_view name) {
    for (const RevenRegisterDecl& r : m.registers) {
      if (r.name == name) return r.id;
    }
    return std::uint16_t{0};
  };
  auto w = RevenWriter::CreateMemory(m);
  w->WriteInitialMemory(std::vector<std::uint8_t>(0x100, 0x90));
  for (const RevenRegisterDecl& r : m.registers) {
    std::uint64_t v = 0;
    if (r.name == "rip") v = 0x1000;
    if (r.name == "rsp") v = 0x10f0;
    if (r.name == "x87control") v = 0x37f;
    w->WriteInitialRegister(r.id, Le(v, r.size));
  }
  for (int i = 0; i < 6; ++i) {
    w->BeginInstruction();
    w->WriteMemory(0x10e8 - 8 * i, Le(0x1000 + i, 8));
    w->WriteOperation(ops + 2);       // rip += 3
    w->WriteOperation(ops + 15 + i);  // eflags |= bit i
    w->WriteOperation(ops + 39);      // rsp -= 8
    w->WriteRegister(id_of("x87r" + std::to_string(7 - i)), Le(0x3fff8000 + i, 10));
    if (panda) {
      w->WriteRegister(id_of("top"), Le(7 - i, 1));
      w->WriteRegister(id_of("x87tags"), Le(0xff << (7 - i) & 0xff, 2));
    } else {
      w->WriteRegister(id_of("x87status"), Le((7 - i) << 11, 2));
      w->WriteRegister(id_of("x87tags"), Le(0xffff >> (2 * (i + 1)), 2));
    }
    w->EndEvent();
  }
  w->BeginOther("page fault with error code 2");
  w->WriteRegister(id_of("cr2"), Le(0xdead000, 8));
  w->EndEvent();
  Status s = w->Finish();
  (void)s;
  return w->TakeBytes();
}

std::string DescribeEvent(const Event& e) {
  std::string out(EventKindName(e.kind));
  out += " t" + std::to_string(e.thread.value);
  if (!e.description.empty()) out += " \"" + std::string(e.description) + "\"";
  for (const MemoryAccess& m : e.writes) out += " W" + HexU64(m.address) + "=" + HexBytes(m.data);
  for (const RegisterWrite& r : e.registers) {
    const RegisterInfo& info = X86_64().info(r.reg);
    out += " R" + std::string(info.name) + "/" + std::to_string(static_cast<int>(r.op)) + "=" +
           HexBytes(std::span<const std::uint8_t>(r.value, info.size));
  }
  return out;
}

Expected<RevenReplay> ReplayReader(TraceReader& reader, bool describe, std::uint64_t max_events) {
  RevenReplay replay;
  replay.registers = reader.InitialRegisters();
  Event e;
  while (replay.events < max_events) {
    BACKSTEP_ASSIGN_OR_RETURN(bool more, reader.Next(&e));
    if (!more) break;
    for (auto& [thread, file] : replay.registers) {
      if (thread != e.thread) continue;
      for (const RegisterWrite& w : e.registers) file.Apply(w);
    }
    for (const MemoryAccess& m : e.writes) {
      for (std::size_t i = 0; i < m.data.size(); ++i) replay.written[m.address + i] = m.data[i];
    }
    if (describe) replay.described.push_back(DescribeEvent(e));
    ++replay.events;
  }
  return replay;
}

}  // namespace backstep::core::testing
