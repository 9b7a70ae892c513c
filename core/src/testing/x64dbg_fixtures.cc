#include "backstep/testing/x64dbg_fixtures.h"

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <random>
#include <set>

#include "backstep/core/trace_writer.h"
#include "formats/x64dbg/x64dbg_trace_writer.h"

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
      {{0x48, 0xff, 0xc9}},                          // dec rcx
      {{0x75, 0xe7}},                                // jnz 0x401000
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
      {{0x49}},                          // dec ecx
      {{0x75, 0xee}},                    // jnz 0x401000
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
  // A memory operand as X64dbgReader reports it: old value read (unless
  // `untrusted`, a PUSH's slot), new value written when it changes.
  void Access(FakeEvent& e, Address a, std::optional<std::uint64_t> store, bool untrusted = false) {
    const std::uint64_t old = Known(a) || !untrusted ? Load(a) : 0;
    if (!untrusted) e.reads.push_back({a, Bytes(old)});
    if (store && *store != old) e.writes.push_back({a, Bytes(*store)});
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

}  // namespace

FakeTrace MakeX64dbgProgram(const X64dbgProgramOptions& options) {
  g_arch = options.i386 ? &I386() : &X86_64();
  const unsigned w = options.i386 ? 4 : 8;
  FakeTrace trace;
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

  // The schedule: which thread runs each instruction.
  std::mt19937_64 rng(options.seed);
  std::vector<int> who;
  int t = 0;
  while (who.size() < options.instructions) {
    const std::uint64_t run = 1 + rng() % 12;
    for (std::uint64_t i = 0; i < run && who.size() < options.instructions; ++i) who.push_back(t);
    if (options.two_threads) t ^= 1;
  }
  RegisterFile truth[2] = {Truth(true), Truth(false)};
  const std::uint64_t tids[2] = {kX64dbgThreadA, kX64dbgThreadB};
  const RegisterId rax = Id(R("rax")), rbx = Id(R("rbx")), rcx = Id(R("rcx")), rdx = Id(R("rdx")),
                   rsp = Id(R("rsp")), rip = Id(R("rip")), eflags = Id("eflags");
  const std::uint64_t mask = w == 8 ? ~std::uint64_t{0} : 0xffffffffu;
  {
    RegisterFile first(*g_arch);
    for (const RegisterWrite& write :
         Known(truth[who.empty() ? 0 : who[0]], options.reveal_at == 0)) {
      first.Apply(write);
    }
    trace.initial_registers.emplace_back(ThreadId(tids[who.empty() ? 0 : who[0]]), first);
  }
  for (std::size_t k = 0; k < who.size(); ++k) {
    const int me = who[k];
    RegisterFile& r = truth[me];
    const RegisterFile before = r;
    FakeEvent e;
    e.thread = ThreadId(tids[me]);
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
          r.SetU64(rsp, r.u64(rsp) - w);
          sim.Access(e, r.u64(rsp), r.u64(rax), /*untrusted=*/true);
          break;
        case 4:
          sim.Access(e, r.u64(rsp), std::nullopt);
          r.SetU64(rax, sim.Load(r.u64(rsp)));
          r.SetU64(rsp, r.u64(rsp) + w);
          break;
        case 5:
          r.SetU64(rcx, (r.u64(rcx) - 1) & mask);
          r.SetU64(eflags, Flags(r.u64(eflags), r.u64(rcx), w));
          break;
        case 6:
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
    const bool last = k + 1 == who.size();
    if (last || who[k + 1] != me) {
      e.flags = kEventClearsRegisters;  // the state after it is not in the file
      trace.events.push_back(std::move(e));
      if (!last) {
        FakeEvent marker;
        marker.thread = ThreadId(tids[who[k + 1]]);
        marker.kind = EventKind::kMarker;
        marker.description = "thread switch";
        marker.flags = kEventClearsRegisters;
        marker.registers = Known(truth[who[k + 1]], k + 1 >= options.reveal_at);
        trace.events.push_back(std::move(marker));
      }
      continue;
    }
    // Registers that change, or become known with the reveal.
    const bool revealed = k + 1 >= options.reveal_at, was = k >= options.reveal_at;
    for (const RegisterWrite& write : Known(r, revealed)) {
      const bool newly = revealed && !was && !EarlyRegister(write.reg);
      const auto old = before.bytes(write.reg);
      if (newly || std::memcmp(old.data(), write.value, old.size()) != 0) {
        e.registers.push_back(write);
      }
    }
    trace.events.push_back(std::move(e));
  }
  return trace;
}

Status WriteX64dbgTrace(const FakeTrace& trace, const std::string& path) {
  // Straight into the writer (FakeTrace files are x86-64 only).
  TraceHeader header;
  header.format = "fake";
  header.arch =
      trace.initial_registers.empty() ? &X86_64() : &trace.initial_registers[0].second.arch();
  header.address_kind = trace.address_kind;
  header.records_reads = trace.records_reads;
  auto image = [&trace](Address a, std::span<std::uint8_t> out, std::span<std::uint8_t> known) {
    for (std::size_t i = 0; i < out.size(); ++i) {
      out[i] = known[i] = 0;
      for (const FakeImageRegion& r : trace.image) {
        if (a + i >= r.start && a + i - r.start < r.bytes.size()) {
          out[i] = r.bytes[a + i - r.start];
          known[i] = r.known[a + i - r.start];
        }
      }
    }
  };
  X64dbgTraceWriter writer(path);
  BACKSTEP_RETURN_IF_ERROR(writer.Begin(header, trace.initial_registers, image));
  Event e;
  for (const FakeEvent& f : trace.events) {
    e.Clear();
    e.thread = f.thread;
    e.kind = f.kind;
    e.flags = f.flags;
    e.description = f.description;
    e.registers = f.registers;
    for (const FakeAccess& r : f.reads) e.reads.push_back({r.address, r.data});
    for (const FakeAccess& w : f.writes) e.writes.push_back({w.address, w.data});
    BACKSTEP_RETURN_IF_ERROR(writer.Append(e));
  }
  return writer.Finish();
}

Expected<std::vector<std::uint8_t>> X64dbgProgramBytes(const X64dbgProgramOptions& options) {
  char name[] = "/tmp/backstep-x64dbg-XXXXXX";
  if (!mkdtemp(name)) return Status::IOError("mkdtemp failed");
  const std::string path = std::string(name) + "/program.trace";
  Status s = WriteX64dbgTrace(MakeX64dbgProgram(options), path);
  std::vector<std::uint8_t> bytes;
  if (s.ok()) {
    std::ifstream in(path, std::ios::binary);
    bytes.assign(std::istreambuf_iterator<char>(in), {});
  }
  std::filesystem::remove_all(name);
  if (!s.ok()) return s;
  return bytes;
}

}  // namespace backstep::core::testing
