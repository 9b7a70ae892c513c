#include "recorder/cpu_state.h"

#include <cpuid.h>

#include <algorithm>
#include <cassert>
#include <cstring>
#include <string>

namespace backstep::record {
namespace {

constexpr std::uint64_t kRf = 1u << 16;

void Put(core::RegisterWrite& w, core::RegisterId id, const void* data, std::size_t n) {
  w.reg = id;
  w.op = core::RegisterOp::kSet;
  std::memset(w.value, 0, sizeof w.value);
  std::memcpy(w.value, data, n);
}

void PutU64(core::RegisterWrite& w, core::RegisterId id, std::uint64_t v) { Put(w, id, &v, 8); }

// x87 tag of one 80-bit register: 0 valid, 1 zero, 2 special.
int TagOf(const std::uint8_t* r) {
  std::uint64_t mantissa;
  std::memcpy(&mantissa, r, 8);
  const unsigned exponent = (r[8] | r[9] << 8) & 0x7fff;
  if (exponent == 0x7fff) return 2;
  if (exponent == 0) return mantissa == 0 ? 1 : 2;
  return (mantissa >> 63) ? 0 : 2;
}

}  // namespace

std::uint16_t FullTagWord(std::uint8_t abridged, std::uint16_t fsw, const std::uint8_t* st) {
  const unsigned top = (fsw >> 11) & 7;
  std::uint16_t tag = 0;
  for (unsigned phys = 0; phys < 8; ++phys) {
    const unsigned t = (abridged >> phys) & 1 ? TagOf(st + 16 * ((phys - top) & 7)) : 3;
    tag |= static_cast<std::uint16_t>(t << (2 * phys));
  }
  return tag;
}

CpuLayout::CpuLayout() {
  const core::ArchDescription& arch = core::X86_64();
  auto add = [&](const std::string& name) {
    const std::optional<core::RegisterId> id = arch.Find(name);
    assert(id && "recorder register missing from X86_64()");
    ids_.push_back(*id);
    sizes_.push_back(arch.info(*id).size);
  };
  for (const char* n : {"rax", "rbx", "rcx", "rdx", "rsi", "rdi",     "rbp",    "rsp",    "r8",
                        "r9",  "r10", "r11", "r12", "r13", "r14",     "r15",    "eflags", "cs",
                        "ss",  "ds",  "es",  "fs",  "gs",  "fs_base", "gs_base"}) {
    add(n);
  }
  gpr_count_ = ids_.size();
  assert(gpr_count_ == kGprSlots && ids_[kFsBaseSlot] == *arch.Find("fs_base"));
  for (const char* n :
       {"fctrl", "fstat", "ftag", "mxcsr", "fop", "fioff", "fiseg", "fooff", "foseg"}) {
    add(n);
  }
  for (int i = 0; i < 8; ++i) add("fpr" + std::to_string(i));
  for (int i = 0; i < 16; ++i) add("xmm" + std::to_string(i));
  unsigned a = 0, b = 0, c = 0, d = 0;
  if (__get_cpuid_count(0xd, 0, &a, &b, &c, &d) && (a & 4)) {
    avx_ = true;
    __get_cpuid_count(0xd, 2, &a, &b, &c, &d);
    ymmh_offset_ = b;
    for (int i = 0; i < 16; ++i) add("ymm" + std::to_string(i) + "h");
  }
  // XCR0 bits 5-7: opmask, ZMM_Hi256, Hi16_ZMM.
  if (avx_ && __get_cpuid_count(0xd, 0, &a, &b, &c, &d) && (a & 0xe0) == 0xe0) {
    avx512_ = true;
    __get_cpuid_count(0xd, 5, &a, &b, &c, &d);
    opmask_offset_ = b;
    __get_cpuid_count(0xd, 6, &a, &b, &c, &d);
    zmmh_offset_ = b;
    __get_cpuid_count(0xd, 7, &a, &b, &c, &d);
    hi16_offset_ = b;
    for (int i = 0; i < 8; ++i) add("k" + std::to_string(i));
    for (int i = 0; i < 16; ++i) add("zmm" + std::to_string(i) + "h");
    for (int i = 16; i < 32; ++i) {
      add("xmm" + std::to_string(i));
      add("ymm" + std::to_string(i) + "h");
      add("zmm" + std::to_string(i) + "h");
    }
  }
}

void CpuLayout::CollectGprs(const user_regs_struct& r, std::span<core::RegisterWrite> out) const {
  const std::uint64_t v[] = {
      r.rax, r.rbx, r.rcx, r.rdx, r.rsi, r.rdi,     r.rbp,    r.rsp,           r.r8,
      r.r9,  r.r10, r.r11, r.r12, r.r13, r.r14,     r.r15,    r.eflags & ~kRf, r.cs,
      r.ss,  r.ds,  r.es,  r.fs,  r.gs,  r.fs_base, r.gs_base};
  static_assert(sizeof v / sizeof v[0] == 25);
  for (std::size_t i = 0; i < gpr_count_; ++i) PutU64(out[i], ids_[i], v[i]);
}

void CpuLayout::CollectFp(std::span<const std::uint8_t> x,
                          std::span<core::RegisterWrite> out) const {
  if (x.size() < 512) return;
  std::size_t s = gpr_count_;
  std::uint16_t fcw, fsw;
  std::memcpy(&fcw, &x[0], 2);
  std::memcpy(&fsw, &x[2], 2);
  const std::uint32_t fctrl = fcw, fstat = fsw, ftag = FullTagWord(x[4], fsw, &x[32]);
  Put(out[s], ids_[s], &fctrl, 4);
  ++s;
  Put(out[s], ids_[s], &fstat, 4);
  ++s;
  Put(out[s], ids_[s], &ftag, 4);
  ++s;
  Put(out[s], ids_[s], &x[24], 4);  // mxcsr
  ++s;
  // The last x87 instruction: its opcode (11 bits), then in the 64-bit
  // layout the instruction and operand pointers as u64, which gdb splits
  // into offset (low half) and "segment" (high half) registers.
  const std::uint32_t fop = (x[6] | (x[7] << 8)) & 0x7ff;
  Put(out[s], ids_[s], &fop, 4);
  ++s;
  for (int at : {8, 12, 16, 20}) {  // fioff, fiseg, fooff, foseg
    Put(out[s], ids_[s], &x[at], 4);
    ++s;
  }
  const unsigned top = (fsw >> 11) & 7;
  for (unsigned phys = 0; phys < 8; ++phys, ++s) {
    Put(out[s], ids_[s], &x[32 + 16 * ((phys - top) & 7)], 10);
  }
  for (int i = 0; i < 16; ++i, ++s) Put(out[s], ids_[s], &x[160 + 16 * i], 16);
  if (!avx_) return;
  static const std::uint8_t kZero[64] = {};
  // A component past the buffer (the kernel gave less) reads as its init state.
  const auto at_or_zero = [&](std::size_t at, std::size_t n) {
    return at + n <= x.size() ? &x[at] : kZero;
  };
  for (int i = 0; i < 16; ++i, ++s)
    Put(out[s], ids_[s], at_or_zero(ymmh_offset_ + 16u * i, 16), 16);
  if (!avx512_) return;
  for (int i = 0; i < 8; ++i, ++s) Put(out[s], ids_[s], at_or_zero(opmask_offset_ + 8u * i, 8), 8);
  for (int i = 0; i < 16; ++i, ++s)
    Put(out[s], ids_[s], at_or_zero(zmmh_offset_ + 32u * i, 32), 32);
  for (int i = 0; i < 16; ++i) {
    const std::size_t at = hi16_offset_ + 64u * i;
    Put(out[s], ids_[s], at_or_zero(at, 16), 16);
    ++s;
    Put(out[s], ids_[s], at_or_zero(at + 16, 16), 16);
    ++s;
    Put(out[s], ids_[s], at_or_zero(at + 32, 32), 32);
    ++s;
  }
}

void CpuLayout::VectorRegister(std::span<const std::uint8_t> x, unsigned v,
                               std::span<std::uint8_t, 64> out) const {
  std::fill(out.begin(), out.end(), 0);
  // Copies n bytes at `at` of the image, when it holds them (else the
  // component is in its init state: zeros).
  const auto copy = [&](std::size_t at, std::size_t n, std::size_t to) {
    if (at + n <= x.size()) std::memcpy(&out[to], &x[at], n);
  };
  if (v < 16) {
    copy(160 + 16u * v, 16, 0);
    if (avx_) copy(ymmh_offset_ + 16u * v, 16, 16);
    if (avx512_) copy(zmmh_offset_ + 32u * v, 32, 32);
  } else if (avx512_ && v < 32) {
    copy(hi16_offset_ + 64u * (v - 16), 64, 0);
  }
}

std::uint64_t CpuLayout::Opmask(std::span<const std::uint8_t> x, unsigned k) const {
  std::uint64_t value = 0;
  if (avx512_ && k < 8 && opmask_offset_ + 8u * (k + 1) <= x.size())
    std::memcpy(&value, &x[opmask_offset_ + 8u * k], 8);
  return value;
}

void DiffRegisters(const CpuLayout& layout, std::span<const core::RegisterWrite> before,
                   std::span<const core::RegisterWrite> after, std::size_t first, std::size_t last,
                   std::vector<core::RegisterWrite>* out) {
  for (std::size_t i = first; i < last; ++i) {
    if (std::memcmp(before[i].value, after[i].value, layout.size(i)) != 0) out->push_back(after[i]);
  }
}

}  // namespace backstep::record
