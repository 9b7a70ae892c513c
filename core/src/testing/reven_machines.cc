#include "testing/reven_machines.h"

#include <string>

#include "backstep/core/hex.h"

namespace backstep::core::testing {
namespace {

class Builder {
 public:
  explicit Builder(RevenMachine* m) : m_(m) {}
  void Reg(std::string name, std::uint16_t size) {
    m_->registers.push_back({next_++, size, std::move(name)});
  }
  // The 41 operations both producers declare, from id `first`.
  void Operations(std::uint8_t first, std::uint16_t rip, std::uint16_t rsp, std::uint16_t flags) {
    std::uint8_t id = first;
    for (int n = 1; n <= 15; ++n) m_->operations.push_back({id++, rip, 1, Le(n, 8)});
    for (int bit : kRevenFlagBits) m_->operations.push_back({id++, flags, 3, Le(1u << bit, 4)});
    for (int bit : kRevenFlagBits) m_->operations.push_back({id++, flags, 2, Le(~(1u << bit), 4)});
    for (int d : {2, 4, 8, 16, -2, -4, -8, -16}) {
      m_->operations.push_back({id++, rsp, 1, Le(static_cast<std::uint64_t>(std::int64_t{d}), 8)});
    }
  }
  void Skip(std::uint16_t n) { next_ += n; }
  void Msr(std::uint32_t index) { Reg("msr_" + HexPadded(index, 8).substr(2), 8); }
  std::uint16_t next() const { return next_; }

  static std::vector<std::uint8_t> Le(std::uint64_t v, int n) {
    std::vector<std::uint8_t> out(n);
    for (int i = 0; i < n; ++i) out[i] = static_cast<std::uint8_t>(v >> (8 * i));
    return out;
  }

 private:
  RevenMachine* m_;
  std::uint16_t next_ = 0;
};

void Gprs(Builder& b) {
  for (const char* r : {"rax", "rbx", "rcx", "rdx", "rsi", "rdi", "rbp", "r8", "r9", "r10", "r11",
                        "r12", "r13", "r14", "r15", "rsp"}) {
    b.Reg(r, 8);
  }
  b.Reg("eflags", 4);
  b.Reg("rip", 8);
}

void Segments(Builder& b) {
  for (const char* s : {"cs", "ds", "es", "ss", "fs", "gs"}) b.Reg(s, 2);
  for (const char* s : {"cs", "ds", "es", "ss", "fs", "gs"}) b.Reg(std::string(s) + "_shadow", 8);
}

void Tables(Builder& b) {
  for (const char* t : {"gdtr", "ldtr", "idtr", "tr"}) b.Reg(std::string(t) + "_base", 8);
  b.Reg("gdtr_limit", 2);
  b.Reg("ldtr_limit", 3);
  b.Reg("idtr_limit", 2);
  b.Reg("tr_limit", 3);
}

void ControlAndDebug(Builder& b) {
  for (const char* r : {"cr0", "cr2", "cr3", "cr4", "cr8"}) b.Reg(r, 8);
  for (const char* r : {"dr0", "dr1", "dr2", "dr3", "dr6", "dr7"}) b.Reg(r, 8);
}

void X87(Builder& b) {
  for (int i = 0; i < 8; ++i) b.Reg("x87r" + std::to_string(i), 10);
  b.Reg("x87lastip", 8);
  b.Reg("x87lastdp", 8);
  for (const char* r : {"x87opcode", "x87status", "x87control", "x87tags"}) b.Reg(r, 2);
}

void Vectors(Builder& b) {
  for (int i = 0; i < 32; ++i) b.Reg("zmm" + std::to_string(i), 64);
  b.Reg("mxcsr", 4);
}

}  // namespace

RevenMachine PandaRevenMachine(std::uint8_t phy_size, std::vector<RevenRegion> regions) {
  RevenMachine m;
  m.phy_size = phy_size;
  m.regions = std::move(regions);
  Builder b(&m);
  Gprs(b);
  b.Operations(18, panda::kRip, panda::kRsp, panda::kEflags);
  b.Skip(41);
  b.Reg("top", 1);
  X87(b);
  Segments(b);
  b.Reg("pkru", 4);
  Tables(b);
  ControlAndDebug(b);
  Vectors(b);
  for (std::uint32_t msr :
       {0x174u, 0x175u, 0x176u, 0x1bu, 0xc0000080u, 0xc0000081u, 0x277u, 0x198u, 0xc0000082u,
        0xc0000083u, 0xc0000084u, 0xc0000100u, 0xc0000101u, 0xc0000102u, 0xc0000103u}) {
    b.Msr(msr);
  }
  for (std::uint32_t msr = 0x200; msr <= 0x20e; msr += 2) b.Msr(msr);
  for (std::uint32_t msr = 0x201; msr <= 0x20f; msr += 2) b.Msr(msr);
  for (std::uint32_t msr : {0x250u, 0x258u, 0x259u}) b.Msr(msr);
  for (std::uint32_t msr = 0x268; msr <= 0x26f; ++msr) b.Msr(msr);
  for (std::uint32_t msr : {0x2ffu, 0xfeu, 0x179u, 0x17bu, 0x17au, 0x1a0u, 0xd90u}) b.Msr(msr);
  for (std::uint32_t msr = 0x400; msr <= 0x427; ++msr) b.Msr(msr);
  m.static_registers = {{"cpuid_pat", std::string(1, '\x01')},
                        {"cpuid_pse36", std::string(1, '\x01')},
                        {"cpuid_1gb_pages", std::string(1, '\x01')},
                        {"cpuid_max_phy_addr", std::string(1, '\x28')},
                        {"cpuid_max_lin_addr", std::string(1, '\x30')}};
  return m;
}

RevenMachine BochsRevenMachine(std::vector<RevenRegion> regions) {
  RevenMachine m;
  m.phy_size = 6;
  m.regions = std::move(regions);
  Builder b(&m);
  Gprs(b);
  Segments(b);
  b.Reg("pkru", 4);
  Tables(b);
  ControlAndDebug(b);
  X87(b);
  Vectors(b);
  for (std::uint32_t msr : {0x1bu, 0x174u, 0x175u, 0x176u, 0xfeu}) b.Msr(msr);
  for (std::uint32_t msr = 0x200; msr <= 0x20e; msr += 2) b.Msr(msr);
  for (std::uint32_t msr = 0x201; msr <= 0x20f; msr += 2) b.Msr(msr);
  for (std::uint32_t msr : {0x250u, 0x258u, 0x259u}) b.Msr(msr);
  for (std::uint32_t msr = 0x268; msr <= 0x26f; ++msr) b.Msr(msr);
  for (std::uint32_t msr :
       {0x277u, 0x2ffu, 0x6e0u, 0xc0000080u, 0xc0000081u, 0xc0000082u, 0xc0000083u, 0xc0000084u,
        0xc0000100u, 0xc0000101u, 0xc0000102u, 0xc0000103u, 0xda0u}) {
    b.Msr(msr);
  }
  b.Operations(kBochsFirstOperation, 17, 15, 16);
  m.static_registers = {{"cpuid_max_phy_addr", std::string(1, '\x28')},
                        {"cpuid_max_lin_addr", std::string(1, '\x30')}};
  return m;
}

}  // namespace backstep::core::testing
