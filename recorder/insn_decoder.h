// InsnDecoder: what an x86-64 instruction may write, decoded with capstone.
//
// Decode() runs before the instruction executes and caches by address (the
// caller invalidates the cache when code may have changed: mmap, mprotect,
// munmap, or a write into an executable mapping). Writes() then turns the
// decoded form plus the registers before and after the step into byte
// ranges, whose contents the recorder reads after the step:
//
//   * explicit memory operands with write access; capstone 4's access flags
//     miss many writes (rol, cmpxchg, cmpxchg16b, movnti, fstp, stmxcsr,
//     vmovdqu [rdi], ymm0 all say "read"), so any other memory operand that
//     can be a destination (the first in Intel order, outside a short list
//     of instructions that only read it: cmp, test, push, jmp, fld, ...) is
//     a *maybe* write: the recorder keeps the bytes that differ from what
//     the trace holds (a write of an unchanged value is then not recorded);
//   * push/call/enter/pushf: [rsp after, rsp before);
//   * stos/movs (rep or not, either direction): between rdi before and
//     after, so any number of iterations per step is covered;
//   * fxsave (512), xsave family (the XCR0-sized area, cpuid 0xd), fnsave
//     (108), fnstenv (28), maskmovdqu/maskmovq ([rdi], 16/8).
// Anything the rules cannot bound (VSIB scatters, undecodable bytes) sets
// `unknown_writes`: the recorder then diffs all writable memory.
//
// EVEX (AVX-512) instructions, and those capstone 4 cannot decode (kmov*),
// are decoded with Zydis (zydis_fallback.h). Bytes neither decodes get
// size 0, unknown_writes and unknown_reads (the recorder counts them).
//
// Decoding is in insn_decoder.cc; Writes() and Reads(), which turn the
// decoded operands into ranges, in insn_ranges.cc.
//
// Reads() gives what the instruction loads, from the same decoding:
//   * explicit memory operands, except the destination of a pure store
//     (capstone's write-only access, or a store mnemonic: mov*, vmov*, set*,
//     fst*, fist*, fnst*, stmxcsr, pextr*, vextract*, xsave*, ...); lea,
//     nop, prefetch and clflush touch no data;
//   * pop/ret/popf/iret: [rsp before, +8); leave: [rbp before, +8);
//   * lods/movs/outs: between rsi before and after; scas: between rdi
//     before and after; cmps: both;
//   * fxrstor (512), xrstor family (the XCR0-sized area), frstor (108),
//     fldenv (28).
//   * VSIB gathers (`gather`, decoded with Zydis): each enabled lane's
//     element, from the index and mask registers before the step
//     (GatherReads, which needs the XSAVE image before the step).
// Not bounded, so not recorded: undecodable instructions (`unknown_reads`:
// the recorder counts their steps) and the kernel's reads of system call
// arguments.
//
// Thread-safety: one thread at a time (capstone handle, cache).
#pragma once

#include <sys/user.h>

#include <cstdint>
#include <optional>
#include <span>
#include <unordered_map>
#include <vector>

#include "backstep/core/types.h"
#include "recorder/cpu_state.h"

namespace backstep::record {

struct Range {
  core::Address start = 0;
  std::uint64_t size = 0;
  bool maybe = false;  // a possible write: record only the bytes that changed
};

struct Decoded {
  std::uint8_t size = 0;  // 0: undecodable
  bool fp = false;        // touches x87/MMX/SSE/AVX state: fetch xstate after it
  bool syscall = false;
  bool pushf = false;
  bool stack_push = false;    // push/call/enter/pushf
  bool string_write = false;  // stos/movs: writes between rdi before and after
  bool pop = false;           // memory operands use rsp after the pop
  bool rdtsc = false, rdtscp = false;
  bool cpuid = false;
  bool breakpoint = false;  // int3/int1/int n
  bool unknown_writes = false;
  bool unknown_reads = false;  // reads not bounded: not recorded
  bool stack_pop = false;      // pop/ret/popf/iret: reads [rsp before, +8)
  bool leave = false;          // reads [rbp before, +8)
  bool string_read_rsi = false, string_read_rdi = false;  // lods/movs/outs, scas/cmps
  std::uint8_t element = 0;                               // string element size
  struct MemOperand {
    std::uint16_t base = 0, index = 0, segment = 0;  // capstone x86_reg
    std::int64_t disp = 0;
    std::uint8_t scale = 1;
    std::uint32_t size = 0;
    bool maybe = false;
  };
  std::vector<MemOperand> writes;  // explicit ones (+ implicit [rdi] of maskmov)
  std::vector<MemOperand> reads;   // explicit ones
  // A VSIB gather (vpgatherdd ... vgatherqpd, VEX and EVEX): lane i, when
  // enabled, reads element_size bytes at the address of `address` (its
  // index unused) + sign-extended index lane i * address.scale.
  struct Gather {
    MemOperand address;
    std::uint8_t index_register = 0;  // vector register number, 0-31
    std::uint8_t index_size = 4;      // bytes per index lane: 4 or 8
    std::uint8_t element_size = 4;    // bytes per data lane: 4 or 8
    std::uint8_t lanes = 0;
    // EVEX: opmask register k1-k7 (lane i enabled by bit i); VEX: a vector
    // register (lane i enabled by the top bit of its data-sized lane i).
    std::uint8_t mask_register = 0;
    bool opmask = false;
  };
  std::optional<Gather> gather;
  // An EVEX read under an opmask (k1-k7, merging or zeroing: vmovdqu8
  // (%rdi),%zmm16{%k1}{z}): element i, element_size bytes at the operand's
  // address + i * element_size, is read only when bit i of the mask is set;
  // the CPU neither reads the others nor faults on them (glibc's *_evex
  // functions load a buffer's tail this way, up to a page's end). Not in
  // `reads`.
  struct MaskedRead {
    MemOperand address;  // address.size: the whole operand, every element
    std::uint8_t element_size = 1;
    std::uint8_t mask_register = 1;  // k1-k7
  };
  std::vector<MaskedRead> masked_reads;
};

class InsnDecoder {
 public:
  InsnDecoder();
  ~InsnDecoder();
  InsnDecoder(const InsnDecoder&) = delete;
  InsnDecoder& operator=(const InsnDecoder&) = delete;

  // Decodes `bytes` (up to 15, fewer at the end of a mapping) at `pc`.
  const Decoded& Decode(core::Address pc, std::span<const std::uint8_t> bytes);
  // Cached decoding at pc, or nullptr.
  const Decoded* Find(core::Address pc) const;
  void Invalidate() { cache_.clear(); }

  // Ranges written by `d`, given the registers before and after its step.
  static void Writes(const Decoded& d, const user_regs_struct& before,
                     const user_regs_struct& after, std::vector<Range>* out);
  // Ranges read by `d`, given the registers before and after its step.
  static void Reads(const Decoded& d, const user_regs_struct& before, const user_regs_struct& after,
                    std::vector<Range>* out);
  // The element reads of gather `g` (Decoded::gather), given the registers
  // and the XSAVE image (`layout`'s) before its step: one range per enabled
  // lane.
  static void GatherReads(const Decoded::Gather& g, const user_regs_struct& before,
                          const CpuLayout& layout, std::span<const std::uint8_t> xstate_before,
                          std::vector<Range>* out);
  // The reads of masked read `m` (Decoded::masked_reads), given the
  // registers before its step and the value of its opmask register: one
  // range per run of enabled elements.
  static void MaskedReads(const Decoded::MaskedRead& m, const user_regs_struct& before,
                          std::uint64_t opmask, std::vector<Range>* out);

 private:
  void DecodeInto(core::Address pc, std::span<const std::uint8_t> bytes, Decoded* d);
  std::size_t handle_ = 0;  // csh
  std::uint32_t xsave_size_ = 4096;
  std::unordered_map<core::Address, Decoded> cache_;
};

}  // namespace backstep::record
