#include "recorder/emu/native_flags.h"

#include <sys/mman.h>

#include <cstring>
#include <vector>

namespace backstep::record {
namespace {

constexpr std::size_t kStubSpace = 1 << 20;
constexpr std::size_t kMaxStub = 512;

bool IsStackOrIp(unsigned reg) {
  switch (reg) {
    case X86_REG_RSP:
    case X86_REG_ESP:
    case X86_REG_SP:
    case X86_REG_SPL:
    case X86_REG_RIP:
    case X86_REG_EIP:
      return true;
    default:
      return false;
  }
}

// The register's number in the ctx array (rax=0 ... r15=15, rsp=7) for the
// x86 encoding order rax rcx rdx rbx rsp rbp rsi rdi r8..r15.
constexpr int kCtxOfEncoding[16] = {0, 2, 3, 1, 7, 6, 4, 5, 8, 9, 10, 11, 12, 13, 14, 15};

// mov reg(encoding e), [rdi + 8*slot]  /  mov [rdi + 8*slot], reg
void Mov(std::vector<std::uint8_t>& c, int e, int slot, bool load) {
  c.push_back(static_cast<std::uint8_t>(0x48 | (e >= 8 ? 4 : 0)));  // REX.W (+R)
  c.push_back(load ? 0x8b : 0x89);
  c.push_back(static_cast<std::uint8_t>(0x87 | ((e & 7) << 3)));  // [rdi + disp32]
  const std::uint32_t disp = static_cast<std::uint32_t>(8 * slot);
  for (int i = 0; i < 4; ++i) c.push_back(static_cast<std::uint8_t>(disp >> (8 * i)));
}

}  // namespace

NativeInsn::NativeInsn() {
  void* p = mmap(nullptr, kStubSpace, PROT_READ | PROT_WRITE | PROT_EXEC,
                 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  page_ = p == MAP_FAILED ? nullptr : static_cast<std::uint8_t*>(p);
}

NativeInsn::~NativeInsn() {
  if (page_) munmap(page_, kStubSpace);
}

bool NativeInsn::Suitable(const cs_insn& insn) {
  if (!insn.detail) return false;
  switch (insn.id) {
    case X86_INS_DIV:
    case X86_INS_IDIV:
      return false;
    default:
      break;
  }
  for (std::uint8_t g = 0; g < insn.detail->groups_count; ++g) {
    const std::uint8_t group = insn.detail->groups[g];
    if (group == X86_GRP_JUMP || group == X86_GRP_CALL || group == X86_GRP_RET ||
        group == X86_GRP_INT || group == X86_GRP_IRET || group == X86_GRP_PRIVILEGE)
      return false;
  }
  const cs_x86& x = insn.detail->x86;
  for (std::uint8_t i = 0; i < x.op_count; ++i) {
    if (x.operands[i].type == X86_OP_MEM) return false;
    if (x.operands[i].type == X86_OP_REG && IsStackOrIp(x.operands[i].reg)) return false;
  }
  return true;
}

bool NativeInsn::Run(std::uint64_t pc, std::span<const std::uint8_t> bytes, std::uint64_t* regs) {
  if (!page_) return false;
  auto it = stubs_.find(pc);
  if (it == stubs_.end()) {
    if (used_ + kMaxStub > kStubSpace) {
      used_ = 0;  // full: start over (the cache goes with it)
      stubs_.clear();
    }
    std::vector<std::uint8_t> c;
    // push rbx, rbp, r12-r15 (callee-saved); push rdi (ctx)
    for (std::uint8_t b : {0x53, 0x55}) c.push_back(b);
    for (std::uint8_t b : {0x54, 0x55, 0x56, 0x57}) c.insert(c.end(), {0x41, b});
    c.push_back(0x57);
    // push qword [rdi + 128]; popfq
    c.insert(c.end(), {0xff, 0xb7, 0x80, 0x00, 0x00, 0x00, 0x9d});
    for (int e = 0; e < 16; ++e) {
      if (e == 4 || e == 7) continue;  // rsp stays ours; rdi last
      Mov(c, e, kCtxOfEncoding[e], true);
    }
    Mov(c, 7, kCtxOfEncoding[7], true);
    c.insert(c.end(), bytes.begin(), bytes.end());
    // pushfq; xchg rdi, [rsp + 8]  (rdi = ctx, the program's rdi on the stack)
    c.insert(c.end(), {0x9c, 0x48, 0x87, 0x7c, 0x24, 0x08});
    for (int e = 0; e < 16; ++e) {
      if (e == 4 || e == 7) continue;
      Mov(c, e, kCtxOfEncoding[e], false);
    }
    // pop rax (flags) -> [rdi+128]; pop rax (program rdi) -> [rdi+40]
    c.push_back(0x58);
    Mov(c, 0, 16, false);
    c.push_back(0x58);
    Mov(c, 0, 5, false);
    // pop r15-r12, rbp, rbx; ret
    for (std::uint8_t b : {0x5f, 0x5e, 0x5d, 0x5c}) c.insert(c.end(), {0x41, b});
    for (std::uint8_t b : {0x5d, 0x5b, 0xc3}) c.push_back(b);
    if (c.size() > kMaxStub) return false;
    std::memcpy(page_ + used_, c.data(), c.size());
    it = stubs_.emplace(pc, page_ + used_).first;
    used_ += (c.size() + 15) & ~std::size_t{15};
  }
  // Flags in: only the arithmetic ones and the fixed bit (never TF, DF, AC...).
  const std::uint64_t flags_in = regs[16];
  regs[16] = (flags_in & 0x8d5) | 0x2;
  std::uint64_t ctx[17];
  std::memcpy(ctx, regs, sizeof ctx);
  auto stub = reinterpret_cast<void (*)(std::uint64_t*)>(it->second);
  stub(ctx);
  std::memcpy(regs, ctx, sizeof ctx);
  regs[16] = (flags_in & ~std::uint64_t{0x8d5}) | (ctx[16] & 0x8d5);
  return true;
}

}  // namespace backstep::record
