#include "backstep/testing/x64dbg_fixtures.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <optional>
#include <random>
#include <set>

#include "formats/x64dbg/x64dbg_block.h"
#include "formats/x64dbg/x64dbg_format.h"
#include "formats/x64dbg/x64dbg_regdump.h"

namespace backstep::core::testing {
namespace {

struct Insn {
  std::vector<std::uint8_t> bytes;
};

const std::vector<Insn>& CodeA() {
  static const std::vector<Insn> code = {
      {{0x48, 0x8b, 0x05, 0xf9, 0x2f, 0x00, 0x00}},  // mov rax, [rip+0x2ff9]
      {{0x48, 0x83, 0xc0, 0x01}},                    // add rax, 1
      {{0x48, 0x89, 0x05, 0xee, 0x2f, 0x00, 0x00}},  // mov [rip+0x2fee], rax
      {{0x50}},                                      // push rax
      {{0x58}},                                      // pop rax
      {{0x50}},              // push rax (the slot holds rax already: x64dbg's bit 0)
      {{0x58}},              // pop rax
      {{0x48, 0xff, 0xc9}},  // dec rcx
      {{0x75, 0xe5}},        // jnz 0x401000
  };
  return code;
}
const std::vector<Insn>& CodeB() {
  static const std::vector<Insn> code = {
      {{0x48, 0x8b, 0x1d, 0xf9, 0x1f, 0x00, 0x00}},  // mov rbx, [rip+0x1ff9]
      {{0x48, 0x89, 0x1c, 0x24}},                    // mov [rsp], rbx
      {{0x48, 0xff, 0xca}},                          // dec rdx
      {{0x75, 0xf0}},                                // jnz 0x402000
  };
  return code;
}

const std::vector<Insn>& CodeA32() {
  static const std::vector<Insn> code = {
      {{0xa1, 0x00, 0x40, 0x40, 0x00}},  // mov eax, [0x404000]
      {{0x83, 0xc0, 0x01}},              // add eax, 1
      {{0xa3, 0x00, 0x40, 0x40, 0x00}},  // mov [0x404000], eax
      {{0x50}},                          // push eax
      {{0x58}},                          // pop eax
      {{0x50}},                          // push eax (bit 0)
      {{0x58}},                          // pop eax
      {{0x49}},                          // dec ecx
      {{0x75, 0xec}},                    // jnz 0x401000
  };
  return code;
}
const std::vector<Insn>& CodeB32() {
  static const std::vector<Insn> code = {
      {{0x8b, 0x1d, 0x00, 0x40, 0x40, 0x00}},  // mov ebx, [0x404000]
      {{0x89, 0x1c, 0x24}},                    // mov [esp], ebx
      {{0x4a}},                                // dec edx
      {{0x75, 0xf4}},                          // jnz 0x402000
  };
  return code;
}

const ArchDescription* g_arch = &X86_64();
RegisterId Id(std::string_view name) { return *g_arch->Find(name); }
// rax.. on x86-64, eax.. on i386.
std::string R(std::string_view name) {
  return g_arch == &X86_64() ? std::string(name) : "e" + std::string(name.substr(1));
}

void SetBytes(RegisterFile& f, std::string_view name, std::uint8_t seed) {
  const RegisterId id = Id(name);
  std::vector<std::uint8_t> v(g_arch->info(id).size);
  for (std::size_t i = 0; i < v.size(); ++i) v[i] = static_cast<std::uint8_t>(seed + 7 * i);
  f.Set(id, v);
}

// Every register of the REGDUMP, with fixed values.
RegisterFile Truth(bool a) {
  RegisterFile f(*g_arch);
  const bool is64 = g_arch == &X86_64();
  std::vector<std::string> gprs = {"rax", "rbx", "rcx", "rdx", "rsi", "rdi", "rbp"};
  for (std::string& g : gprs) g = R(g);
  if (is64) {
    for (int i = 8; i < 16; ++i) gprs.push_back("r" + std::to_string(i));
  }
  std::uint64_t v = a ? 0x1000 : 0x2000;
  for (const std::string& g : gprs) f.SetU64(Id(g), v++);
  f.SetU64(Id(R("rax")), 0);
  f.SetU64(Id(R("rcx")), 100000);
  f.SetU64(Id(R("rdx")), 100000);
  f.SetU64(Id(R("rsp")), a ? kX64dbgStackA : kX64dbgStackB);
  f.SetU64(Id(R("rip")), a ? kX64dbgCodeA : kX64dbgCodeB);
  f.SetU64(Id("eflags"), 0x246);
  const std::pair<const char*, std::uint64_t> segs[] = {
      {"cs", is64 ? 0x33 : 0x23}, {"ss", 0x2b}, {"ds", 0x2b}, {"es", 0x2b},
      {"fs", is64 ? 0x53 : 0x53}, {"gs", 0x2b}};
  for (const auto& [n, s] : segs) f.SetU64(Id(n), s);
  for (const char* d : {"dr0", "dr1", "dr2", "dr3", "dr6", "dr7"}) f.SetU64(Id(d), 0);
  f.SetU64(Id("dr7"), a ? 0x400 : 0x401);
  for (int j = 0; j < 8; ++j) SetBytes(f, "fpr" + std::to_string(j), std::uint8_t(0x30 + j));
  f.SetU64(Id("fctrl"), 0x27f);
  f.SetU64(Id("fstat"), a ? 0x3800 : 0x2000);  // TOP 7 / 4
  f.SetU64(Id("ftag"), a ? 0x3fff : 0xffff);
  for (const char* x : {"fioff", "fiseg", "fooff", "foseg"}) f.SetU64(Id(x), 0);
  f.SetU64(Id("fioff"), 0x401234);
  f.SetU64(Id("mxcsr"), 0x1f80);
  for (int i = 0; i < (is64 ? 16 : 8); ++i) {
    SetBytes(f, "xmm" + std::to_string(i), std::uint8_t((a ? 0x80 : 0x10) + i));
    SetBytes(f, "ymm" + std::to_string(i) + "h", std::uint8_t((a ? 0xc0 : 0x50) + i));
  }
  f.SetU64(Id("lasterror"), a ? kX64dbgLastErrorA : 0);
  return f;
}

bool EarlyRegister(RegisterId id) {
  if (id == g_arch->flags()) return true;
  for (const char* n : {"rax", "rbx", "rcx", "rdx", "rsp", "rip"}) {
    if (id == Id(R(n))) return true;
  }
  return false;
}

// The registers of `truth` the trace knows with `revealed`.
std::vector<RegisterWrite> Known(const RegisterFile& truth, bool revealed) {
  std::vector<RegisterWrite> out;
  for (RegisterId id = 0; id < g_arch->register_count(); ++id) {
    if (!truth.known(id) || (!revealed && !EarlyRegister(id))) continue;
    RegisterWrite w;
    w.reg = id;
    auto b = truth.bytes(id);
    std::memcpy(w.value, b.data(), b.size());
    out.push_back(w);
  }
  return out;
}

std::uint64_t Flags(std::uint64_t flags, std::uint64_t result, unsigned width) {
  if (width == 4) result &= 0xffffffffu;
  flags &= ~std::uint64_t{0xc4};  // ZF SF PF
  if (result == 0) flags |= 0x40;
  if (result >> (8 * width - 1)) flags |= 0x80;
  if (__builtin_popcount(static_cast<unsigned>(result & 0xff)) % 2 == 0) flags |= 0x4;
  return flags;
}

class Simulator {
 public:
  Simulator(FakeTrace* trace, unsigned width) : trace_(trace), w_(width) {}

  std::uint64_t Load(Address a) {
    std::uint64_t v = 0;
    for (unsigned i = 0; i < w_; ++i) v |= std::uint64_t(memory_[a + i]) << (8 * i);
    return v;
  }
  bool Known(Address a) const { return trace_known_.count(a) && trace_known_.count(a + w_ - 1); }
  void MarkKnown(Address a) {
    for (unsigned i = 0; i < w_; ++i) trace_known_.insert(a + i);
  }
  std::vector<std::uint8_t> Bytes(std::uint64_t v) {
    std::vector<std::uint8_t> b(w_);
    for (unsigned i = 0; i < w_; ++i) b[i] = static_cast<std::uint8_t>(v >> (8 * i));
    return b;
  }
  // A memory operand as X64dbgReader reports it: old value read, new value
  // written when it changes; a PUSH's slot (`pushed`) is only written, with
  // its value after the push, changed or not.
  void Access(FakeEvent& e, Address a, std::optional<std::uint64_t> store, bool pushed = false) {
    const std::uint64_t old = Load(a);
    if (!pushed) e.reads.push_back({a, Bytes(old)});
    if (store && (pushed || *store != old)) e.writes.push_back({a, Bytes(*store)});
    if (store) {
      for (unsigned i = 0; i < w_; ++i)
        memory_[a + i] = static_cast<std::uint8_t>(*store >> (8 * i));
    }
    MarkKnown(a);
  }
  void Image(Address a, std::uint64_t v) {
    for (unsigned i = 0; i < w_; ++i) memory_[a + i] = static_cast<std::uint8_t>(v >> (8 * i));
    MarkKnown(a);
  }

  std::map<Address, std::uint8_t> memory_;
  std::set<Address> trace_known_;
  FakeTrace* trace_;
  unsigned w_;
};

// One simulated instruction: its thread, its thread's registers before and
// after it, and its memory accesses.
struct Step {
  int who = 0;
  RegisterFile before, after;
  FakeEvent body;
};

struct Program {
  FakeTrace trace;  // header and image; events filled by Model()
  std::vector<Step> steps;
  std::uint64_t tids[2] = {};
};

Program Simulate(const X64dbgProgramOptions& options) {
  g_arch = options.i386 ? &I386() : &X86_64();
  const unsigned w = options.i386 ? 4 : 8;
  Program program;
  FakeTrace& trace = program.trace;
  trace.address_kind = AddressKind::kVirtual;
  trace.records_reads = true;
  Simulator sim(&trace, w);
  // The image: the counter and a few stack words (so every old value is
  // known to the writer).
  sim.Image(kX64dbgCounter, 0);
  for (Address s : {kX64dbgStackA - w, kX64dbgStackA, kX64dbgStackB - w, kX64dbgStackB}) {
    sim.Image(s, 0x5151515151515151u);
  }
  auto image_region = [&](Address start, std::size_t size) {
    FakeImageRegion r;
    r.start = start;
    for (std::size_t i = 0; i < size; ++i) {
      r.bytes.push_back(sim.memory_[start + i]);
      r.known.push_back(1);
    }
    trace.image.push_back(std::move(r));
  };
  image_region(kX64dbgCounter, w);
  image_region(kX64dbgStackB - w, 2 * w);
  image_region(kX64dbgStackA - w, 2 * w);

  // The schedule: which thread runs each instruction (one more, on the
  // other thread, for a file that ends after a switch).
  const std::uint64_t count = options.instructions + (options.end_with_switch ? 1 : 0);
  std::mt19937_64 rng(options.seed);
  std::vector<int> who;
  int t = 0;
  while (who.size() < count) {
    const std::uint64_t run = 1 + rng() % 12;
    for (std::uint64_t i = 0; i < run && who.size() < count; ++i) who.push_back(t);
    if (options.two_threads) t ^= 1;
  }
  if (options.end_with_switch && count >= 2) who.back() = 1 - who[count - 2];
  RegisterFile truth[2] = {Truth(true), Truth(false)};
  program.tids[0] = options.thread_a;
  program.tids[1] = options.thread_b;
  const RegisterId rax = Id(R("rax")), rbx = Id(R("rbx")), rcx = Id(R("rcx")), rdx = Id(R("rdx")),
                   rsp = Id(R("rsp")), rip = Id(R("rip")), eflags = Id("eflags");
  const std::uint64_t mask = w == 8 ? ~std::uint64_t{0} : 0xffffffffu;
  for (std::size_t k = 0; k < who.size(); ++k) {
    const int me = who[k];
    RegisterFile& r = truth[me];
    Step step{me, r, r, {}};
    FakeEvent& e = step.body;
    e.thread = ThreadId(program.tids[me]);
    const Address pc = r.u64(rip);
    const auto& code = me == 0 ? (w == 8 ? CodeA() : CodeA32()) : (w == 8 ? CodeB() : CodeB32());
    const Address base = me == 0 ? kX64dbgCodeA : kX64dbgCodeB;
    std::size_t index = 0;
    Address at = base;
    while (at != pc) at += code[index++].bytes.size();
    const Insn& insn = code[index];
    e.reads.push_back({pc, insn.bytes});
    Address next = pc + insn.bytes.size();
    if (me == 0) {
      switch (index) {
        case 0:
          sim.Access(e, kX64dbgCounter, std::nullopt);
          r.SetU64(rax, sim.Load(kX64dbgCounter));
          break;
        case 1:
          r.SetU64(rax, (r.u64(rax) + 1) & mask);
          r.SetU64(eflags, Flags(r.u64(eflags), r.u64(rax), w));
          break;
        case 2:
          sim.Access(e, kX64dbgCounter, r.u64(rax));
          break;
        case 3:
        case 5:
          r.SetU64(rsp, r.u64(rsp) - w);
          sim.Access(e, r.u64(rsp), r.u64(rax), /*pushed=*/true);
          break;
        case 4:
        case 6:
          sim.Access(e, r.u64(rsp), std::nullopt);
          r.SetU64(rax, sim.Load(r.u64(rsp)));
          r.SetU64(rsp, r.u64(rsp) + w);
          break;
        case 7:
          r.SetU64(rcx, (r.u64(rcx) - 1) & mask);
          r.SetU64(eflags, Flags(r.u64(eflags), r.u64(rcx), w));
          break;
        case 8:
          if (!(r.u64(eflags) & 0x40)) next = kX64dbgCodeA;
          break;
      }
    } else {
      switch (index) {
        case 0:
          sim.Access(e, kX64dbgCounter, std::nullopt);
          r.SetU64(rbx, sim.Load(kX64dbgCounter));
          break;
        case 1:
          sim.Access(e, r.u64(rsp), r.u64(rbx));
          break;
        case 2:
          r.SetU64(rdx, (r.u64(rdx) - 1) & mask);
          r.SetU64(eflags, Flags(r.u64(eflags), r.u64(rdx), w));
          break;
        case 3:
          if (!(r.u64(eflags) & 0x40)) next = kX64dbgCodeB;
          break;
      }
    }
    r.SetU64(rip, next);
    step.after = r;
    program.steps.push_back(std::move(step));
  }
  return program;
}

const X64dbgDumpLayout& Layout() {
  return g_arch == &X86_64() ? X64dbgDumpLayout::X64() : **X64dbgDumpLayout::X86();
}

RegisterFile FileOf(const std::vector<RegisterWrite>& writes) {
  RegisterFile f(*g_arch);
  for (const RegisterWrite& w : writes) f.Apply(w);
  return f;
}

struct Dump {
  std::vector<std::uint8_t> bytes, known;
};
Dump DumpOf(const RegisterFile& regs) {
  const X64dbgDumpLayout& layout = Layout();
  Dump d{std::vector<std::uint8_t>(layout.dump_size()),
         std::vector<std::uint8_t>(layout.slot_count())};
  layout.Encode(regs, d.bytes, d.known);
  return d;
}

// The registers known after the last block `k` when no switch follows it:
// those of the slots it does not list. The writer lists a slot that differs
// between before(k) and after it, or between before(k-1) and before(k),
// every slot of a full dump, and a slot it cannot tell unchanged (a
// register unknown after: the listed ones are, in the reader's events it
// may be given back).
std::vector<RegisterWrite> UnlistedAfterLast(const Program& program, std::size_t k,
                                             std::uint64_t reveal_at) {
  const X64dbgDumpLayout& layout = Layout();
  const Step& s = program.steps[k];
  const Dump before = DumpOf(FileOf(Known(s.before, k >= reveal_at)));
  const Dump after = DumpOf(FileOf(Known(s.after, k >= reveal_at)));
  std::optional<Dump> previous;
  if (k > 0) previous = DumpOf(FileOf(Known(program.steps[k - 1].before, k - 1 >= reveal_at)));
  const unsigned duint = layout.duint();
  auto differs = [&](const Dump& a, const Dump& b, unsigned slot) {
    return !a.known[slot] || !b.known[slot] ||
           std::memcmp(a.bytes.data() + slot * duint, b.bytes.data() + slot * duint, duint) != 0;
  };
  const bool full =
      std::all_of(before.known.begin(), before.known.end(), [](auto x) { return x; }) &&
      k % kX64dbgFullDumpEvery == 0;
  std::vector<std::uint8_t> unlisted(layout.slot_count());
  for (unsigned slot = 0; slot < layout.slot_count(); ++slot) {
    unlisted[slot] = before.known[slot] && !full && !differs(before, after, slot) && previous &&
                     !differs(*previous, before, slot);
  }
  std::vector<RegisterWrite> out;
  while (true) {
    out.clear();
    layout.DecodeAll(before.bytes, unlisted, &out);
    const Dump kept = DumpOf(FileOf(out));
    bool stable = true;
    for (unsigned slot = 0; slot < layout.slot_count(); ++slot) {
      if (unlisted[slot] && !kept.known[slot]) unlisted[slot] = 0, stable = false;
    }
    if (stable) return out;
  }
}

// The reader's events (x64dbg_reader.h) for the first `blocks` steps; the
// last has bit 7 (the file ends after a switch) when `last_switch`.
FakeTrace Model(const Program& program, const X64dbgProgramOptions& options, std::size_t blocks,
                bool last_switch) {
  FakeTrace trace = program.trace;
  const std::vector<Step>& steps = program.steps;
  auto revealed = [&](std::size_t k) { return k >= options.reveal_at; };
  auto tid = [&](std::size_t k) { return ThreadId(program.tids[steps[k].who]); };
  // A thread that has not run yet is suspended: the registers of its first
  // block from position 0 on.
  for (std::size_t k = 0; k < blocks; ++k) {
    const bool seen = std::any_of(trace.initial_registers.begin(), trace.initial_registers.end(),
                                  [&](const auto& t) { return t.first == tid(k); });
    if (!seen) {
      trace.initial_registers.emplace_back(tid(k), FileOf(Known(steps[k].before, revealed(k))));
    }
  }
  for (std::size_t k = 0; k < blocks; ++k) {
    const Step& s = steps[k];
    FakeEvent e = s.body;
    if (k + 1 == blocks) {
      e.flags = kEventClearsRegisters;
      if (!last_switch) e.registers = UnlistedAfterLast(program, k, options.reveal_at);
    } else if (steps[k + 1].who != s.who) {
      // Switched out: its registers at its next block, when it runs again.
      e.flags = kEventClearsRegisters;
      for (std::size_t m = k + 2; m < blocks; ++m) {
        if (steps[m].who == s.who) {
          e.registers = Known(s.after, revealed(m));
          break;
        }
      }
    } else if (k > 0 && steps[k - 1].who != s.who) {
      // Its first instruction after a switch: every register.
      e.flags = kEventClearsRegisters;
      e.registers = Known(s.after, revealed(k + 1));
    } else {
      // Registers that change, or become known with the reveal.
      const bool now = revealed(k + 1), was = revealed(k);
      for (const RegisterWrite& write : Known(s.after, now)) {
        const bool newly = now && !was && !EarlyRegister(write.reg);
        const auto old = s.before.bytes(write.reg);
        if (newly || std::memcmp(old.data(), write.value, old.size()) != 0) {
          e.registers.push_back(write);
        }
      }
    }
    trace.events.push_back(std::move(e));
  }
  return trace;
}

}  // namespace

FakeTrace MakeX64dbgProgram(const X64dbgProgramOptions& options) {
  const Program program = Simulate(options);
  return Model(program, options, options.instructions, options.end_with_switch);
}

Status WriteX64dbgProgram(const X64dbgProgramOptions& options, const std::string& path) {
  const Program program = Simulate(options);
  BACKSTEP_RETURN_IF_ERROR(
      WriteX64dbgTrace(Model(program, options, program.steps.size(), false), path));
  if (!options.end_with_switch) return Status::Ok();
  // x64dbg drops the pending instruction when the recording stops: the
  // file ends with the block of bit 7 before it.
  std::ifstream in(path, std::ios::binary);
  const std::vector<std::uint8_t> bytes{std::istreambuf_iterator<char>(in), {}};
  const unsigned duint = options.i386 ? 4 : 8;
  const unsigned slots = Layout().slot_count();
  std::uint64_t offset =
      8 + (bytes[4] | bytes[5] << 8 | bytes[6] << 16 | std::uint64_t{bytes[7]} << 24);
  X64dbgBlock block, prev;
  std::uint64_t last = offset;
  for (bool first = true; offset < bytes.size(); first = false) {
    BACKSTEP_RETURN_IF_ERROR(
        ParseX64dbgNextBlock(bytes, offset, duint, slots, first ? nullptr : &prev, path, &block));
    last = offset;
    offset = block.end;
    prev = block;
  }
  std::filesystem::resize_file(path, last);
  return Status::Ok();
}

}  // namespace backstep::core::testing
