#include "backstep/testing/fake_trace_generator.h"

#include <cassert>
#include <cstring>
#include <map>
#include <random>
#include <string>

namespace backstep::core::testing {
namespace {

constexpr Address kPageSize = 4096;
constexpr Address kPml4 = 0x1000, kPdpt = 0x2000, kPd = 0x3000, kPt = 0x4000;
constexpr int kPcPoolSize = 40;
constexpr Address kPcBase = 0x401000;

class Generator {
 public:
  explicit Generator(const FakeTraceOptions& o) : o_(o), rng_(o.seed), arch_(X86_64()) {}
  FakeTrace Run();

 private:
  std::uint64_t Rand(std::uint64_t n) {
    return std::uniform_int_distribution<std::uint64_t>(0, n - 1)(rng_);
  }
  bool Chance(double p) { return std::bernoulli_distribution(p)(rng_); }
  void AddRegion(Address start, Address size, bool writable);
  void SetupPaging();
  void InitialRegisters(FakeTrace& t);
  RegisterWrite RandomRegisterOp();
  FakeAccess RandomAccess(bool for_write);
  void MakeEvent(FakeEvent& e, ThreadId thread);
  // A note for an event of `kind` (FakeTraceOptions::notes), from a counter
  // (no random choice: the trace is otherwise the same).
  std::string NoteText(EventKind kind) {
    const std::uint64_t n = ++notes_;
    const std::string page = "0x" + std::to_string(7 + n % 3) + "0000000+0x1000";
    switch (kind) {
      case EventKind::kSyscall:
        if (n % 4 == 0) return "syscall 9(0x0, 0x1000) = 0x0; map " + page + " rw- [heap]";
        if (n % 4 == 1) return "syscall 11(0x0, 0x1000) = 0x0; unmap " + page;
        return "syscall 1(0x1, 0x2, 0x3) = 0x3";
      case EventKind::kInterrupt:
        return "signal " + std::to_string(1 + n % 30);
      case EventKind::kMarker:
        return n % 2 ? "exit" : "killed by signal 9";
      default:
        return "page fault";
    }
  }
  std::uint64_t notes_ = 0;

  FakeTraceOptions o_;
  std::mt19937_64 rng_;
  const ArchDescription& arch_;
  std::map<Address, std::uint8_t> memory_;  // the true machine memory
  std::vector<std::pair<Address, Address>> writable_;
  std::vector<FakeImageRegion> image_;
  std::vector<RegisterId> regs_;     // registers random ops touch
  std::map<std::uint64_t, int> pc_;  // thread -> index in the pc pool
};

void Generator::AddRegion(Address start, Address size, bool writable) {
  FakeImageRegion region;
  region.start = start;
  region.bytes.resize(size);
  region.known.resize(size);
  for (Address i = 0; i < size; ++i) {
    auto it = memory_.find(start + i);
    const std::uint8_t v = it != memory_.end() ? it->second : static_cast<std::uint8_t>(Rand(256));
    memory_[start + i] = v;
    region.bytes[i] = v;
  }
  // Partial images know 16-byte chunks at random; page tables are always known.
  for (Address i = 0; i < size; i += 16) {
    const bool known = !writable || o_.full_image || Chance(0.5);
    for (Address j = i; j < i + 16 && j < size; ++j) region.known[j] = known;
  }
  if (writable) writable_.emplace_back(start, start + size);
  image_.push_back(std::move(region));
}

void Generator::SetupPaging() {
  auto put = [&](Address a, std::uint64_t v) {
    for (int i = 0; i < 8; ++i) memory_[a + i] = static_cast<std::uint8_t>(v >> (8 * i));
  };
  for (Address a = kPml4; a < kPt + kPageSize; ++a) memory_[a] = 0;
  put(kPml4, kPdpt | 3);                    // PML4[0] -> PDPT
  put(kPdpt, 0 | 0x83);                     // PDPT[0]: 1 GiB page at 0
  put(kPdpt + 8, kPd | 3);                  // PDPT[1] -> PD
  put(kPd, kPt | 3);                        // PD[0] -> PT
  for (int i = 0; i < kMappedPages; ++i) {  // PT[i] -> mapped physical pages
    put(kPt + 8 * i, (kMappedPhysical + kPageSize * i) | 3);
  }
  AddRegion(kPml4, kPt + kPageSize - kPml4, /*writable=*/false);
}

void Generator::InitialRegisters(FakeTrace& t) {
  for (int i = 0; i < o_.threads; ++i) {
    // With three or more threads, the third starts with no initial registers.
    if (i == 2) continue;
    RegisterFile file(arch_);
    for (RegisterId id : regs_) {
      if (!o_.full_registers && Chance(0.3)) continue;
      std::uint8_t v[64];
      for (auto& b : v) b = static_cast<std::uint8_t>(Rand(256));
      file.Set(id, {v, arch_.info(id).size});
    }
    pc_[100 + i] = static_cast<int>(Rand(kPcPoolSize));
    if (o_.full_registers || Chance(0.5)) file.SetU64(arch_.pc(), kPcBase + 4 * pc_[100 + i]);
    if (o_.address_kind == AddressKind::kPhysical) {
      file.SetU64(*arch_.Find("cr0"), 0x80000011);
      file.SetU64(*arch_.Find("cr3"), kPml4);
      file.SetU64(*arch_.Find("cr4"), 0x20);
      file.SetU64(*arch_.Find("efer"), 0x500);
    }
    t.initial_registers.emplace_back(ThreadId(100 + i), std::move(file));
  }
}

RegisterWrite Generator::RandomRegisterOp() {
  RegisterWrite w;
  w.reg = regs_[Rand(regs_.size())];
  w.op = static_cast<RegisterOp>(Rand(4));
  for (auto& b : w.value) b = static_cast<std::uint8_t>(Rand(256));
  if (w.op == RegisterOp::kAnd) w.value[0] |= 0x0f;
  return w;
}

FakeAccess Generator::RandomAccess(bool for_write) {
  static constexpr std::size_t kSizes[] = {1, 2, 4, 8, 8, 16};
  FakeAccess a;
  std::size_t len = Chance(0.2) ? 1 + Rand(64) : kSizes[Rand(std::size(kSizes))];
  const auto& [lo, hi] = writable_[Rand(writable_.size())];
  if (Chance(0.35)) {
    a.address = lo + Rand(64) * 8;  // the hot page: its first 512 bytes
  } else if (Chance(0.15)) {
    // Cross a page boundary inside the region when it has one.
    const Address boundary =
        lo + kPageSize * (1 + Rand(std::max<Address>(1, (hi - lo) / kPageSize - 1)));
    a.address = boundary - 1 - Rand(std::min<std::size_t>(len, 8));
  } else {
    a.address = lo + Rand(hi - lo);
  }
  if (a.address < lo) a.address = lo;
  if (a.address + len > hi) len = hi - a.address;
  (void)for_write;
  a.data.resize(len);
  return a;
}

void Generator::MakeEvent(FakeEvent& e, ThreadId thread) {
  e.thread = thread;
  const bool frame = o_.clears && Chance(0.08);
  if (frame) {
    e.kind = EventKind::kFrame;
    e.flags = kEventClearsMemory | kEventClearsRegisters;
  } else if (Chance(0.08)) {
    static constexpr EventKind kOther[] = {EventKind::kSyscall, EventKind::kInterrupt,
                                           EventKind::kException, EventKind::kMarker};
    e.kind = kOther[Rand(4)];
    e.description = e.kind == EventKind::kException ? "page fault" : "other event";
    if (o_.notes) e.description = NoteText(e.kind);
  }
  // Reads see the state before the event.
  if (o_.records_reads) {
    for (std::uint64_t n = Rand(3); n > 0; --n) {
      FakeAccess r = RandomAccess(false);
      for (std::size_t i = 0; i < r.data.size(); ++i) r.data[i] = memory_[r.address + i];
      e.reads.push_back(std::move(r));
    }
  }
  int& pc = pc_[thread.value];
  if (e.kind == EventKind::kInstruction || frame) {
    pc = Chance(0.7) ? (pc + 1) % kPcPoolSize : static_cast<int>(Rand(kPcPoolSize));
    RegisterWrite w;
    w.reg = arch_.pc();
    const std::uint64_t v = kPcBase + 4 * pc;
    std::memcpy(w.value, &v, 8);
    e.registers.push_back(w);
  }
  for (std::uint64_t n = Rand(frame ? 6 : 3); n > 0; --n) e.registers.push_back(RandomRegisterOp());
  std::uint64_t writes = Chance(0.5) ? 0 : 1 + Rand(frame ? 6 : 3);
  for (; writes > 0; --writes) {
    FakeAccess w = RandomAccess(true);
    for (std::size_t i = 0; i < w.data.size(); ++i) {
      // Unchanged bytes now and then, for the only_changes filter.
      w.data[i] = Chance(0.2) ? memory_[w.address + i] : static_cast<std::uint8_t>(Rand(256));
      memory_[w.address + i] = w.data[i];
    }
    e.writes.push_back(std::move(w));
  }
}

FakeTrace Generator::Run() {
  FakeTrace t;
  t.address_kind = o_.address_kind;
  t.records_reads = o_.records_reads;
  t.reader_copies_data = o_.reader_copies_data;
  for (const char* name : {"rax", "rbx", "rcx", "rdx", "rsp", "rbp", "r8", "eflags", "xmm0", "xmm1",
                           "fs_base", "ymm0h", "fpr0", "mxcsr"}) {
    if (auto id = arch_.Find(name)) regs_.push_back(*id);
  }
  if (o_.address_kind == AddressKind::kPhysical) SetupPaging();
  for (const auto& [lo, hi] : FakeDataRegions(o_.address_kind)) AddRegion(lo, hi - lo, true);
  InitialRegisters(t);
  t.image = image_;
  std::uint64_t thread = 100, run_left = 0;
  for (std::size_t i = 0; i < o_.events; ++i) {
    if (run_left == 0) {
      thread = 100 + Rand(o_.threads);
      run_left = 1 + Rand(40);
    }
    --run_left;
    t.events.emplace_back();
    MakeEvent(t.events.back(), ThreadId(thread));
  }
  return t;
}

}  // namespace

FakeTrace GenerateFakeTrace(const FakeTraceOptions& options) {
  assert(options.threads >= 1);
  // Physical traces keep their paging registers: no register clears.
  FakeTraceOptions o = options;
  if (o.address_kind == AddressKind::kPhysical) o.clears = false;
  return Generator(o).Run();
}

std::optional<Address> FakeTranslate(Address va) {
  if (va < (Address(1) << 30)) return va;
  if (va >= kMappedVirtual && va < kMappedVirtual + kMappedPages * kPageSize) {
    return kMappedPhysical + (va - kMappedVirtual);
  }
  return std::nullopt;
}

std::vector<Address> FakePcPool() {
  std::vector<Address> pcs;
  for (int i = 0; i < kPcPoolSize; ++i) pcs.push_back(kPcBase + 4 * i);
  return pcs;
}

std::vector<std::pair<Address, Address>> FakeDataRegions(AddressKind kind) {
  if (kind == AddressKind::kPhysical) {
    return {{0x100000, 0x100000 + 4 * kPageSize},
            {kMappedPhysical, kMappedPhysical + kMappedPages * kPageSize}};
  }
  return {{0x10000, 0x10000 + 4 * kPageSize},
          {0x7fff0000, 0x7fff0000 + 3 * kPageSize},
          {0x12345000, 0x12345000 + kPageSize}};
}

}  // namespace backstep::core::testing
