// The machine descriptions of REVEN's two producers (docs/formats/reven.md §1.5), for
// tests, fuzz seeds and the synthetic generator.
//
// PANDA (reven_tracer_bin) interleaves its 41 operations between register
// ids and declares a `top` register (its x87status lacks TOP, its x87tags is
// a valid mask); Bochs (bochs_replayer) puts the same operations after its
// registers, has no `top`, and its x87status/x87tags are the architectural
// words. Register names, sizes and ids are the producers' own.
//
// Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <vector>

#include "formats/reven/reven_machine.h"

namespace backstep::core::testing {

// Register and operation ids of the PANDA machine.
namespace panda {
inline constexpr std::uint16_t kRax = 0, kRbx = 1, kRcx = 2, kRdx = 3, kRsi = 4, kRdi = 5;
inline constexpr std::uint16_t kRbp = 6, kR8 = 7, kRsp = 15, kEflags = 16, kRip = 17;
inline constexpr std::uint8_t kRipAdd1 = 18;   // 18..32: rip += 1..15
inline constexpr std::uint8_t kFlagsOr = 33;   // 33..41: eflags |= bit (CF PF AF ZF SF TF IF DF OF)
inline constexpr std::uint8_t kFlagsAnd = 42;  // 42..50: eflags &= ~bit
inline constexpr std::uint8_t kRspAdd = 51;    // 51..54: rsp += 2 4 8 16; 55..58: -2 -4 -8 -16
inline constexpr std::uint16_t kTop = 59;
inline constexpr std::uint16_t kX87r0 = 60;  // 60..67
inline constexpr std::uint16_t kX87LastIp = 68, kX87LastDp = 69, kX87Opcode = 70;
inline constexpr std::uint16_t kX87Status = 71, kX87Control = 72, kX87Tags = 73;
inline constexpr std::uint16_t kCs = 74;        // cs ds es ss fs gs
inline constexpr std::uint16_t kCsShadow = 80;  // cs_shadow .. gs_shadow
inline constexpr std::uint16_t kCr0 = 95, kCr2 = 96, kCr3 = 97, kCr4 = 98;
inline constexpr std::uint16_t kZmm0 = 106;  // 106..137
inline constexpr std::uint16_t kMsrEfer = 143, kMsrFsBase = 150, kMsrGsBase = 151;
}  // namespace panda

// Bits the eflags operations of both producers touch, in operation order.
inline constexpr int kRevenFlagBits[9] = {0, 2, 4, 6, 7, 8, 9, 10, 11};

// PANDA's machine: `phy_size` bytes per physical address.
RevenMachine PandaRevenMachine(std::uint8_t phy_size, std::vector<RevenRegion> regions);
// Bochs' machine (PHY_SIZE 6). Operations are ids 142..182 in PANDA's order.
RevenMachine BochsRevenMachine(std::vector<RevenRegion> regions);
inline constexpr std::uint8_t kBochsFirstOperation = 142;

}  // namespace backstep::core::testing
