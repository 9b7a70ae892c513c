#include "recorder/native/syscall_slot.h"

#include <cstring>

namespace backstep::record {

std::optional<Relocation> RelocateAfterSyscall(const std::uint8_t* b, std::uint64_t site) {
  Relocation r;
  std::size_t at = 2;
  while (at < 5) {
    const std::uint8_t* p = b + at;
    if (p[0] == 0x48 && p[1] == 0x3d) {  // cmp $imm32, %rax
      r.code.insert(r.code.end(), p, p + 6);
      at += 6;
    } else if (p[0] == 0x85 && p[1] == 0xc0) {  // test %eax, %eax
      r.code.insert(r.code.end(), p, p + 2);
      at += 2;
    } else if (p[0] == 0x48 && p[1] == 0x85 && p[2] == 0xc0) {  // test %rax, %rax
      r.code.insert(r.code.end(), p, p + 3);
      at += 3;
    } else if ((p[0] & 0xf0) == 0x70) {  // jcc rel8 -> jcc rel32
      const std::uint64_t target = site + at + 2 + static_cast<std::int8_t>(p[1]);
      if (target >= site && target < site + 16) return std::nullopt;  // into the patch
      r.code.insert(r.code.end(), {0x0f, static_cast<std::uint8_t>(0x80 | (p[0] & 0x0f))});
      r.targets.push_back({r.code.size(), target});
      r.code.insert(r.code.end(), 4, 0);
      at += 2;
    } else if (p[0] == 0xc3) {  // ret
      r.code.push_back(0xc3);
      r.returns = true;
      ++at;
      if (at >= 5) break;
      const std::uint8_t x = b[at], y = b[at + 1];
      const bool padding = (x == 0x0f && y == 0x1f) ||
                           (x == 0x66 && (y == 0x0f || y == 0x2e || y == 0x66)) ||
                           (x == 0xcc && y == 0xcc) || (x == 0x2e && y == 0x0f);
      if (!padding) return std::nullopt;
      at = 5;
    } else {
      return std::nullopt;
    }
  }
  r.length = at;
  return r;
}

std::array<std::uint8_t, stub::kSlotSize> BuildSlot(std::uint64_t core, std::uint64_t slot,
                                                    std::uint64_t site, const Relocation& after) {
  std::array<std::uint8_t, stub::kSlotSize> b;
  b.fill(0xcc);
  std::uint8_t* p = b.data();
  auto bytes = [&](std::initializer_list<std::uint8_t> l) {
    for (std::uint8_t x : l) *p++ = x;
  };
  auto u64 = [&](std::uint64_t v) {
    std::memcpy(p, &v, 8);
    p += 8;
  };
  auto rel32 = [&](std::uint8_t* at, std::uint64_t target) {
    const std::uint64_t next = slot + static_cast<std::uint64_t>(at - b.data()) + 4;
    const auto d = static_cast<std::uint32_t>(static_cast<std::int64_t>(target - next));
    std::memcpy(at, &d, 4);
  };
  bytes({0x0f, 0x05});  // kSlotTraced: syscall
  bytes({0x48, 0xb9});  // kSlotContinue: movabs $site+2, %rcx
  u64(site + 2);
  std::uint8_t* const code = p;
  for (std::uint8_t x : after.code) *p++ = x;
  for (const auto& [offset, target] : after.targets) rel32(code + offset, target);
  if (!after.returns) {
    bytes({0xe9});  // jmp site+length
    rel32(p, site + after.length);
    p += 4;
  }
  p = b.data() + stub::kSlotEntry;
  bytes({0x48, 0xa3});  // movabs %rax, saved_rax
  u64(stub::DataAddress(core, stub::kDataSavedRax));
  bytes({0x48, 0x89, 0xe0, 0x48, 0xa3});  // mov %rsp,%rax; movabs %rax, saved_rsp
  u64(stub::DataAddress(core, stub::kDataSavedRsp));
  bytes({0x48, 0xb8});  // movabs $slot, %rax
  u64(slot);
  bytes({0x48, 0xa3});  // movabs %rax, slot
  u64(stub::DataAddress(core, stub::kDataSlot));
  bytes({0x48, 0xb8});  // movabs $stack_top, %rax
  u64(core + stub::kStackTop);
  bytes({0x48, 0x89, 0xc4, 0x48, 0xa1});  // mov %rax,%rsp; movabs saved_rax, %rax
  u64(stub::DataAddress(core, stub::kDataSavedRax));
  bytes({0xff, 0x25, 0, 0, 0, 0});  // jmp *0(%rip)
  u64(core + stub::kCommonEntry);
  return b;
}

}  // namespace backstep::record
