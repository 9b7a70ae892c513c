#include "testing/usercorn_fixtures.h"

#include <snappy.h>

#include <algorithm>
#include <random>

#include "backstep/testing/reader_fuzz.h"
#include "formats/usercorn/usercorn_writer.h"

namespace backstep::core::testing {

std::uint32_t ReferenceCrc32c(std::span<const std::uint8_t> data) {
  std::uint32_t c = 0xffffffffu;
  for (std::uint8_t b : data) {
    c ^= b;
    for (int i = 0; i < 8; ++i) c = (c >> 1) ^ (0x82f63b78u & (0u - (c & 1)));
  }
  return ~c;
}

std::vector<std::uint8_t> HandUcirHeader(const UcirFileSpec& spec) {
  UcirBytes b;
  b.Str("UCIR");
  for (int shift = 24; shift >= 0; shift -= 8) b.U8(spec.version >> shift);  // big-endian
  for (const std::string& name : {spec.arch, spec.os}) {
    b.Str(name.substr(0, 32));
    for (std::size_t i = std::min<std::size_t>(name.size(), 32); i < 32; ++i) b.U8(0);
  }
  b.U8(spec.code_order).U8(spec.data_order);
  return std::move(b.bytes());
}

std::vector<std::uint8_t> HandSnappyFrames(std::span<const std::uint8_t> data, std::size_t chunk,
                                           bool compressed) {
  UcirBytes b;
  b.U8(0xff).U8(6).U8(0).U8(0).Str("sNaPpY");
  for (std::size_t at = 0; at < data.size(); at += chunk) {
    const auto piece = data.subspan(at, std::min(chunk, data.size() - at));
    const std::uint32_t c = ReferenceCrc32c(piece);
    const std::uint32_t masked = ((c >> 15) | (c << 17)) + 0xa282ead8u;
    std::string payload(reinterpret_cast<const char*>(piece.data()), piece.size());
    if (compressed) {
      std::string out;
      snappy::Compress(payload.data(), payload.size(), &out);
      payload = out;
    }
    b.U8(compressed ? 0x00 : 0x01).Le(payload.size() + 4, 3).U32(masked).Str(payload);
  }
  return std::move(b.bytes());
}

std::vector<std::uint8_t> HandUcirFile(std::span<const std::uint8_t> ops,
                                       const UcirFileSpec& spec) {
  std::vector<std::uint8_t> out = HandUcirHeader(spec);
  const auto frames = HandSnappyFrames(ops, spec.chunk, spec.compressed);
  out.insert(out.end(), frames.begin(), frames.end());
  return out;
}

std::vector<std::uint8_t> SmallUsercornTrace(SnappyChunkMode mode, std::size_t chunk) {
  UsercornWriterOptions o;
  o.chunk_mode = mode;
  o.chunk_size = chunk;
  auto w = UsercornWriter::CreateMemory(o);
  std::uint8_t xmm0[16], xmm1[16], code[32], stack[16];
  for (int i = 0; i < 16; ++i) xmm0[i] = static_cast<std::uint8_t>(i + 1);
  for (int i = 0; i < 16; ++i) xmm1[i] = static_cast<std::uint8_t>(0xf0 + i);
  for (int i = 0; i < 32; ++i) code[i] = static_cast<std::uint8_t>(0x90 + i);
  for (int i = 0; i < 16; ++i) stack[i] = static_cast<std::uint8_t>(0x40 + i);
  const std::uint8_t push[8] = {1, 2, 3, 4, 5, 6, 7, 8}, hi[2] = {'h', 'i'}, aa = 0xaa, bb = 0xbb;

  w->BeginKeyframe(0);
  w->Reg(35, 0x1111);      // rax
  w->Reg(44, 0x7fff0f00);  // rsp
  w->Reg(25, 0x246);       // eflags (optional)
  w->Reg(19, 0x1234);      // eax: no register, ignored
  w->SpReg(122, xmm0);
  w->MemMap({0x400000, 0x1000, kProtRead | kProtExec, 0, 0x1000, "", "/bin/prog"});
  w->MemWrite(0x400000, code);
  w->MemMap({0x7fff0000, 0x1000, kProtRead | kProtWrite, 0, 0, "stack", ""});
  w->MemWrite(0x7fff0000, stack);  // trimmed, at the start: warned about
  w->MemProt(0x400000, 0x1000, kProtRead);
  w->Nop();
  w->EndFrame();

  w->BeginFrame(0);
  w->Jmp(0x400000, 16);  // initial pc
  w->MemRead(0x7fff0f00, 8);
  w->MemWrite(0x7fff0ef8, push);
  w->Reg(44, 0x7fff0ef8);
  w->Step(4);  // event 0
  w->Reg(35, 9);
  w->Step(2);  // event 1: a syscall instruction, tail below
  const std::uint64_t mmap_args[] = {0, 0x1000, 3};
  w->BeginSyscall(9, 0x10000000, mmap_args);
  w->MemMap({0x10000000, 0x1000, kProtRead | kProtWrite, 0, 0, "mmap", ""});
  w->MemWrite(0x10000000, hi);
  w->Reg(35, 0x10000000);
  w->MemProt(0x10000000, 0x1000, kProtRead);
  w->MemUnmap(0x20000000, 0x1000);
  w->Nop();
  w->EndSyscall();
  w->EndFrame();

  w->BeginFrame(0);
  w->Jmp(0x400100, 8);  // event 1 jumps here
  w->Nop();
  w->SpReg(123, xmm1);
  w->Step(3);                       // event 2
  w->MemUnmap(0x10000000, 0x1000);  // its tail
  w->EndFrame();
  w->Nop();  // top level, still its tail
  w->BeginFrame(0);
  w->Jmp(0x400200, 2);  // event 2 jumps here
  w->MemWrite(0x10000100, std::span<const std::uint8_t>(&aa, 1));
  w->EndFrame();
  w->BeginFrame(0);
  w->Jmp(0x400200, 2);  // event 3: a rep iteration, JMP only
  w->MemWrite(0x10000101, std::span<const std::uint8_t>(&bb, 1));
  w->Reg(38, 0);  // rcx
  w->Step(2);     // event 4: last iteration
  w->Reg(35, 60);
  w->Step(5);  // event 5
  const std::uint64_t exit_args[] = {7};
  w->BeginSyscall(60, 0, exit_args);  // exit(): EXIT inside, before its STEP
  w->Exit();
  w->EndSyscall();
  w->Reg(35, 0);
  w->Step(2);  // event 6, then the "exit" marker
  w->EndFrame();
  w->Nop();
  (void)w->Finish();
  return w->TakeBytes();
}

std::vector<std::uint8_t> GeneratedUsercornTrace(std::uint64_t seed, std::size_t instructions,
                                                 SnappyChunkMode mode, std::size_t chunk) {
  std::mt19937_64 rng(seed);
  auto rand = [&](std::uint64_t n) { return n ? rng() % n : 0; };
  UsercornWriterOptions o;
  o.chunk_mode = mode;
  o.chunk_size = chunk;
  o.max_frame_bytes = 200;  // many frame splits
  auto w = UsercornWriter::CreateMemory(o);
  const UsercornMapping maps[] = {
      {0x400000, 0x2000, kProtRead | kProtExec, 0, 0x2000, "", "/bin/gen"},
      {0x600000, 0x1000, kProtRead | kProtWrite, 0, 0, "data", ""},
      {0x7ffe0000, 0x2000, kProtRead | kProtWrite, 0, 0, "stack", ""}};
  const std::uint16_t gprs[] = {35, 36, 37, 38, 39, 40, 43, 44, 106, 113};
  std::vector<UsercornRegisterValue> init;
  for (std::uint16_t r : gprs) init.push_back({r, rand(3) ? rng() : 0});
  std::erase_if(init, [](const UsercornRegisterValue& v) { return v.value == 0; });
  auto read = [&](const UsercornMapping& m, std::vector<std::uint8_t>* data) {
    data->assign(m.size, 0);
    for (std::size_t i = 64; i < data->size(); i += 1 + rand(16)) (*data)[i] = rng() & 0xff;
    return Status::Ok();
  };
  Address pc = 0x400000 + 4 * rand(0x100);
  (void)w->Begin(0, init, maps, read, pc);
  std::vector<MemoryAccess> writes;
  std::vector<std::vector<std::uint8_t>> bytes;
  std::vector<UsercornRegisterValue> regs;
  for (std::size_t i = 0; i < instructions; ++i) {
    writes.clear();
    bytes.clear();
    regs.clear();
    for (std::uint64_t n = rand(3); n > 0; --n) {
      bytes.emplace_back(1 + rand(16));
      for (auto& b : bytes.back()) b = rng() & 0xff;
    }
    for (const auto& b : bytes) writes.push_back({0x600000 + rand(0xf00), b});
    for (std::uint64_t n = rand(3); n > 0; --n) regs.push_back({gprs[rand(10)], rng()});
    UsercornInstruction insn;
    insn.pc = pc;
    insn.size = static_cast<std::uint8_t>(1 + rand(8));
    insn.writes = writes;
    insn.registers = regs;
    insn.reads =
        std::span<const MemoryAccess>(writes).first(std::min<std::size_t>(1, writes.size()));
    w->AppendInstruction(insn);
    if (rand(20) == 0) {
      const std::uint64_t args[] = {rng(), rng()};
      const UsercornMapping fresh{0x10000000 + 0x1000 * rand(16), 0x1000, kProtRead, 0, 0, "", ""};
      UsercornSyscall s;
      s.num = static_cast<std::uint32_t>(rand(300));
      s.ret = rng();
      s.args = args;
      if (rand(2)) s.maps = std::span<const UsercornMapping>(&fresh, 1);
      s.writes = writes;
      s.registers = regs;
      w->AppendSyscall(s);
    }
    const std::uint64_t r = rand(10);
    if (r == 0) {
      pc = 0x400000 + 4 * rand(0x400);  // a jump
    } else if (r != 1) {
      pc += insn.size;  // r == 1: a self-loop (rep)
    }
  }
  w->AppendExit();
  (void)w->Finish();
  return w->TakeBytes();
}

std::vector<std::pair<std::string, std::vector<std::uint8_t>>> UsercornSeedFiles() {
  return {
      {"small.ucir", SmallUsercornTrace()},
      {"small_stored.ucir", SmallUsercornTrace(SnappyChunkMode::kUncompressed)},
      {"small_compressed.ucir", SmallUsercornTrace(SnappyChunkMode::kCompressed, 65536)},
      {"generated.ucir", GeneratedUsercornTrace(1, 200, SnappyChunkMode::kAuto, 512)},
  };
}

}  // namespace backstep::core::testing
