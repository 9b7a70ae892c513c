#include "testing/reven_gen_cpu.h"

#include <algorithm>

namespace backstep::core::testing {

void RevenGenRun::Mem(Address va, const void* data, std::size_t n, bool physical) {
  const auto* bytes = static_cast<const std::uint8_t*>(data);
  while (n > 0) {
    const std::size_t piece = physical ? n : std::min<std::size_t>(n, kGenPage - va % kGenPage);
    const Address pa = physical ? va : Translate(va);
    w_->WriteMemory(pa, std::span<const std::uint8_t>(bytes, piece));
    for (std::size_t i = 0; i < piece; ++i) {
      if (std::uint8_t* p = PhysPointer(pa + i)) *p = bytes[i];
    }
    if (pa / kGenPage < dirty_.size()) dirty_[pa / kGenPage] = 1;
    va += piece;
    bytes += piece;
    n -= piece;
  }
}

void RevenGenRun::Body(const GenInsn& insn, std::uint32_t* next, bool* jumped) {
  std::uint8_t buf[300];
  switch (insn.kind) {
    case GenKind::kAlu:
      Reg64(RandomGpr(), rng_.Next());
      FlagOp();
      break;
    case GenKind::kPush:
      Push(rng_.Next() | 1);
      break;
    case GenKind::kPop:
      Reg64(rng_.Below(2) ? panda::kRbx : panda::kRbp, Pop());
      break;
    case GenKind::kCall:
      Push(insn.pc + insn.length);
      frames_.push_back({static_cast<std::uint32_t>(1 + rng_.Below(4))});
      *next = insn.target;
      *jumped = true;
      break;
    case GenKind::kRet: {
      const std::uint64_t back = Pop();
      frames_.pop_back();
      const auto it = std::find_if(program_.insns.begin(), program_.insns.end(),
                                   [&](const GenInsn& i) { return i.pc == back; });
      *next = static_cast<std::uint32_t>(it - program_.insns.begin());
      *jumped = true;
      break;
    }
    case GenKind::kLoopBack:
      Reg64(panda::kRcx, frames_.back().loop_left);
      FlagOp();
      if (frames_.back().loop_left > 0) {
        --frames_.back().loop_left;
        *next = insn.target;
        *jumped = true;
      }
      break;
    case GenKind::kJump:
      frames_.back().loop_left = 0;
      *next = insn.target;
      *jumped = true;
      break;
    case GenKind::kStore: {
      const std::size_t n = (++stores_ % 500 == 0) ? 300 : std::size_t{1} << rng_.Below(4);
      for (std::size_t i = 0; i < n; ++i) buf[i] = static_cast<std::uint8_t>(rng_.Next());
      Mem(HeapAddress(n), buf, n);
      break;
    }
    case GenKind::kLoad:
      Reg64(RandomGpr(), rng_.Next());
      break;
    case GenKind::kBigStore: {
      const int n = 16 + static_cast<int>(rng_.Below(5));
      const Address base = HeapAddress(n * 16);
      for (int i = 0; i < n; ++i) {
        const std::uint64_t v = rng_.Next();
        Mem(base + 16 * i, &v, 8);
      }
      Reg64(panda::kRcx, 0);
      Reg64(panda::kRdi, base + 16 * n);
      ++info_.continuation_events;
      break;
    }
    case GenKind::kManyRegs:
      for (std::uint16_t id = 0; id < 15; ++id) {
        if (id != panda::kRsp) Reg64(id, rng_.Next());
      }
      for (std::uint16_t id = panda::kR8; id < panda::kR8 + 2; ++id) Reg64(id, rng_.Next());
      ++info_.continuation_events;
      break;
    case GenKind::kX87: {
      top_ = (top_ - 1) & 7;
      valid_ |= static_cast<std::uint8_t>(1u << top_);
      for (int i = 0; i < 10; ++i) buf[i] = static_cast<std::uint8_t>(rng_.Next());
      Reg(panda::kX87r0 + top_, buf, 10);
      const std::uint8_t top = static_cast<std::uint8_t>(top_);
      Reg(panda::kTop, &top, 1);
      const std::uint16_t status = static_cast<std::uint16_t>(rng_.Next() & 0x4700);
      Reg(panda::kX87Status, &status, 2);
      const std::uint16_t tags = valid_;
      Reg(panda::kX87Tags, &tags, 2);
      Reg64(panda::kX87LastIp, insn.pc);
      break;
    }
    case GenKind::kZmm:
      for (int i = 0; i < 64; ++i) buf[i] = static_cast<std::uint8_t>(rng_.Next());
      Reg(panda::kZmm0 + rng_.Below(32), buf, 64);
      break;
    case GenKind::kMmio: {
      const std::uint32_t eoi = 0;
      Mem(kGenApicEoi, &eoi, 4, /*physical=*/true);
      break;
    }
  }
}

void RevenGenRun::Instruction(std::uint64_t event) {
  const GenInsn& insn = program_.insns[at_];
  if (event == info_.once_event && info_.once_event != 0) {
    const std::uint64_t v = 0x0badc0ffee0ddf00ull;
    Mem(info_.once_address, &v, 8);
  }
  std::uint32_t next = at_ + 1;
  bool jumped = false;
  Body(insn, &next, &jumped);
  if (jumped) {
    rip_ = program_.insns[next].pc;
    Reg64(panda::kRip, rip_);
  } else {
    w_->WriteOperation(panda::kRipAdd1 + insn.length - 1);
    rip_ += insn.length;
  }
  at_ = next;
}

// An interrupt or fault delivery: the frame below the stack, a register, and
// rip = `new_rip`.
void RevenGenRun::Other(std::uint64_t event, std::string_view description, Address new_rip) {
  w_->BeginOther(description);
  const std::uint64_t frame[5] = {rip_, 0x33, flags_, rsp_, 0x2b};
  Mem(rsp_ - 0x100, frame, sizeof frame);
  if (description == "page fault") Reg64(panda::kCr2, kGenHeapVirt + event);
  Reg64(RandomGpr(), rng_.Next());
  if (new_rip != rip_) {
    rip_ = new_rip;
    Reg64(panda::kRip, rip_);
  }
  w_->EndEvent();
  ++info_.other_events;
}

}  // namespace backstep::core::testing
