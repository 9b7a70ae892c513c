// backstep_make_bap OUT [--iterations N]: writes a BAP frames trace of a
// hand-made two-thread x86-64 program through backstep's BAP writer
// (formats/bap/bap_trace_writer.h), for the end-to-end test
// tests/e2e/test_bap.py. Every instruction's bytes are real, so gdb can
// disassemble them.
//
//   thread 1 (BAP thread 0)             thread 2 (BAP thread 1)
//   0x401000 mov rax, [0x404000]        0x402000 mov rbx, [0x404008]
//   0x401008 add rax, 1                 0x402008 inc rbx
//   0x40100c mov [0x404000], rax        0x40200b mov [0x404010], rbx
//   0x401014 jmp 0x401000               0x402013 jmp 0x402000
//
// The threads alternate one loop iteration at a time, thread 1 first.
// counter (0x404000) starts at 10; flag (0x404008) holds 0x1234 and is only
// read; out (0x404010) gets flag + 1. Each thread knows its pc at the start
// and nothing else: rsp and the other registers are never touched.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "backstep/core/format_registry.h"
#include "backstep/core/trace_writer.h"

namespace {

using namespace backstep::core;

struct Insn {
  std::uint64_t pc;
  std::vector<std::uint8_t> bytes;
};

const std::vector<Insn> kThread1 = {
    {0x401000, {0x48, 0x8b, 0x04, 0x25, 0x00, 0x40, 0x40, 0x00}},
    {0x401008, {0x48, 0x83, 0xc0, 0x01}},
    {0x40100c, {0x48, 0x89, 0x04, 0x25, 0x00, 0x40, 0x40, 0x00}},
    {0x401014, {0xeb, 0xea}},
};
const std::vector<Insn> kThread2 = {
    {0x402000, {0x48, 0x8b, 0x1c, 0x25, 0x08, 0x40, 0x40, 0x00}},
    {0x402008, {0x48, 0xff, 0xc3}},
    {0x40200b, {0x48, 0x89, 0x1c, 0x25, 0x10, 0x40, 0x40, 0x00}},
    {0x402013, {0xeb, 0xeb}},
};

std::vector<std::uint8_t> Le(std::uint64_t v) {
  std::vector<std::uint8_t> out(8);
  for (int i = 0; i < 8; ++i) out[i] = static_cast<std::uint8_t>(v >> (8 * i));
  return out;
}

RegisterWrite Set(RegisterId id, std::uint64_t v) {
  RegisterWrite w;
  w.reg = id;
  for (int i = 0; i < 8; ++i) w.value[i] = static_cast<std::uint8_t>(v >> (8 * i));
  return w;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: backstep_make_bap OUT [--iterations N]\n");
    return 2;
  }
  int iterations = 5;
  if (argc == 4 && std::string(argv[2]) == "--iterations") iterations = std::atoi(argv[3]);
  const ArchDescription& arch = X86_64();
  const RegisterId rip = arch.pc(), rax = *arch.Find("rax"), rbx = *arch.Find("rbx"),
                   eflags = arch.flags();
  TraceHeader header;
  header.format = "hand-made";
  header.arch = &arch;
  std::vector<std::pair<ThreadId, RegisterFile>> initial;
  for (auto [tid, pc] : {std::pair{1, 0x401000}, std::pair{2, 0x402000}}) {
    RegisterFile regs(arch);
    regs.SetU64(rip, pc);
    initial.emplace_back(ThreadId(tid), regs);
  }
  auto created = CreateTraceWriter("bap", argv[1]);
  if (!created.ok()) {
    std::fprintf(stderr, "make_bap: %s\n", created.status().ToString().c_str());
    return 1;
  }
  TraceWriter& writer = **created;
  Status s = writer.Begin(header, initial, {});
  std::uint64_t counter = 10;
  const std::uint64_t flag = 0x1234;
  std::vector<std::vector<std::uint8_t>> keep;  // data the events point into
  auto append = [&](ThreadId t, const Insn& insn, std::uint64_t next,
                    std::vector<RegisterWrite> regs, std::vector<MemoryAccess> reads,
                    std::vector<MemoryAccess> writes) {
    if (!s.ok()) return;
    Event e;
    e.thread = t;
    e.kind = EventKind::kInstruction;
    e.reads.push_back({insn.pc, insn.bytes});
    for (const MemoryAccess& r : reads) e.reads.push_back(r);
    e.writes = std::move(writes);
    e.registers = std::move(regs);
    e.registers.push_back(Set(rip, next));
    s = writer.Append(e);
  };
  for (int i = 0; i < iterations && s.ok(); ++i) {
    const ThreadId t1(1), t2(2);
    keep.push_back(Le(counter));
    append(t1, kThread1[0], 0x401008, {Set(rax, counter)}, {{0x404000, keep.back()}}, {});
    ++counter;
    append(t1, kThread1[1], 0x40100c, {Set(rax, counter), Set(eflags, 0x202)}, {}, {});
    keep.push_back(Le(counter));
    append(t1, kThread1[2], 0x401014, {}, {}, {{0x404000, keep.back()}});
    append(t1, kThread1[3], 0x401000, {}, {}, {});
    keep.push_back(Le(flag));
    append(t2, kThread2[0], 0x402008, {Set(rbx, flag)}, {{0x404008, keep.back()}}, {});
    append(t2, kThread2[1], 0x40200b, {Set(rbx, flag + 1), Set(eflags, 0x206)}, {}, {});
    keep.push_back(Le(flag + 1));
    append(t2, kThread2[2], 0x402013, {}, {}, {{0x404010, keep.back()}});
    append(t2, kThread2[3], 0x402000, {}, {}, {});
  }
  if (s.ok()) s = writer.Finish();
  if (!s.ok()) {
    std::fprintf(stderr, "backstep_make_bap: %s\n", s.ToString().c_str());
    return 1;
  }
  return 0;
}
