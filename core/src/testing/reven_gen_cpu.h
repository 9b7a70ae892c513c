// RevenGenRun: the state and the event emission of the synthetic REVEN
// generator (reven_generator.h), shared by its two source files:
// reven_generator.cc lays out memory and drives the run, reven_gen_cpu.cc
// turns program instructions into events.
//
// The run tracks what a REVEN cache needs: every register by REVEN id
// (PANDA's machine, reven_machines.h), the physical image of the declared
// regions, and the pages dirtied since the last cache point. rip, rsp and
// eflags live in scalars (operations change them on almost every event) and
// are copied into the register bytes when a snapshot is taken.
//
// Internal to core/src/testing. Thread-safety: one thread.
#pragma once

#include <cstdint>
#include <cstring>
#include <string_view>
#include <vector>

#include "backstep/testing/reven_generator.h"
#include "formats/reven/reven_cache.h"
#include "formats/reven/reven_writer.h"
#include "testing/reven_gen_program.h"
#include "testing/reven_machines.h"

namespace backstep::core::testing {

inline constexpr std::uint64_t kGenPage = 4096;
// Virtual layout (with paging); without paging the ranges sit at their
// physical addresses.
inline constexpr Address kGenCodeVirt = 0x400000, kGenStackVirt = 0x7ffffff00000,
                         kGenHeapVirt = 0x10000000;
inline constexpr std::uint64_t kGenCodePages = 4, kGenStackPages = 16, kGenHeapPages = 256;
inline constexpr Address kGenFarPcOffset =
    0x3f00;  // far from the program (which ends before 0x2400)
// Physical layout: three regions; tables in the first, the rest in the third.
inline constexpr Address kGenTables = 0x1000;
inline constexpr Address kGenCodePhys = 0x200000, kGenStackPhys = 0x300000, kGenHeapPhys = 0x400000;
inline constexpr std::uint64_t kGenHeapSlots =
    1024;  // heap pages scatter over [0x400000, 0x800000)
inline constexpr RevenRegion kGenRegions[] = {
    {0, 0x9f000}, {0xc0000, 0x20000}, {0x100000, 0x700000}};
inline constexpr Address kGenApicEoi = 0xfee000b0;
inline constexpr std::uint64_t kGenOncePage = kGenHeapPages - 1;  // no other event writes this page

class RevenGenRun {
 public:
  RevenGenRun(const RevenGenOptions& o, RevenWriter* w)
      : o_(o), w_(w), rng_(o.seed), machine_(PandaRevenMachine(o.phy_size, Regions())) {
    for (const RevenRegisterDecl& r : machine_.registers) {
      offset_.resize(std::max<std::size_t>(offset_.size(), r.id + 1));
      size_.resize(offset_.size());
      offset_[r.id] = static_cast<std::uint32_t>(values_.size());
      size_[r.id] = r.size;
      values_.resize(values_.size() + r.size);
    }
  }

  static std::vector<RevenRegion> Regions() {
    return {std::begin(kGenRegions), std::end(kGenRegions)};
  }
  const RevenMachine& machine() const { return machine_; }
  void set_writer(RevenWriter* w) { w_ = w; }
  RevenGenInfo& info() { return info_; }
  std::vector<RevenCachePointData>& cache() { return cache_; }

  void Layout();
  void WriteInitialState();
  void Run();

 private:
  // --- state ---
  void SetValue(std::uint16_t id, std::uint64_t v) {
    std::uint8_t b[8];
    std::memcpy(b, &v, 8);
    std::memcpy(&values_[offset_[id]], b, std::min<std::size_t>(8, size_[id]));
  }
  std::uint8_t* PhysPointer(Address pa) {
    for (std::size_t i = 0; i < std::size(kGenRegions); ++i) {
      if (pa >= kGenRegions[i].start && pa - kGenRegions[i].start < kGenRegions[i].size) {
        return &image_[i][pa - kGenRegions[i].start];
      }
    }
    return nullptr;
  }
  Address Translate(Address va) const { return *info_.Translate(va); }

  // --- event pieces ---
  void Reg(std::uint16_t id, const void* value, std::size_t n) {
    std::memcpy(&values_[offset_[id]], value, n);
    w_->WriteRegister(id, std::span<const std::uint8_t>(&values_[offset_[id]], n));
  }
  void Reg64(std::uint16_t id, std::uint64_t v) { Reg(id, &v, 8); }
  void Mem(Address va, const void* data, std::size_t n, bool physical = false);
  void Push(std::uint64_t value) {
    Mem(rsp_ - 8, &value, 8);
    w_->WriteOperation(panda::kRspAdd + 6);  // rsp += -8
    rsp_ -= 8;
  }
  std::uint64_t Pop() {
    std::uint64_t v = 0;
    for (int i = 0; i < 8; ++i) v |= std::uint64_t{*PhysPointer(Translate(rsp_ + i))} << (8 * i);
    w_->WriteOperation(panda::kRspAdd + 2);  // rsp += 8
    rsp_ += 8;
    return v;
  }
  void FlagOp() {
    const int i = static_cast<int>(rng_.Below(9));
    const std::uint32_t bit = 1u << kRevenFlagBits[i];
    if (rng_.Below(2)) {
      w_->WriteOperation(panda::kFlagsOr + i);
      flags_ |= bit;
    } else {
      w_->WriteOperation(panda::kFlagsAnd + i);
      flags_ &= ~bit;
    }
  }
  std::uint16_t RandomGpr() {
    static constexpr std::uint16_t kGprs[] = {0, 1, 2, 3, 4, 5, 7, 8, 9, 10, 11, 12, 13, 14};
    return kGprs[rng_.Below(std::size(kGprs))];
  }
  Address HeapAddress(std::uint64_t span) {
    const std::uint64_t page = rng_.Below(kGenOncePage);
    return kHeapStart() + page * kGenPage + rng_.Below(kGenPage - span + 1);
  }
  Address kHeapStart() const { return o_.with_paging ? kGenHeapVirt : kGenHeapPhys; }

  void Instruction(std::uint64_t event);
  void Body(const GenInsn& insn, std::uint32_t* next, bool* jumped);
  void Other(std::uint64_t event, std::string_view description, Address new_rip);
  void CachePoint(std::uint64_t context);
  void SyncScalars() {
    SetValue(panda::kRip, rip_);
    SetValue(panda::kRsp, rsp_);
    SetValue(panda::kEflags, flags_);
  }

  struct Frame {
    std::uint32_t loop_left;
  };

  const RevenGenOptions& o_;
  RevenWriter* w_;
  GenRandom rng_;
  RevenMachine machine_;
  RevenGenInfo info_;
  GenProgram program_;
  std::vector<std::uint32_t> offset_;  // REVEN id -> offset in values_
  std::vector<std::uint16_t> size_;    // REVEN id -> size
  std::vector<std::uint8_t> values_;   // every register's bytes
  std::vector<std::vector<std::uint8_t>> image_;
  std::vector<std::uint8_t> dirty_;  // per page of image_[2] (and [0], [1] by offset)
  std::vector<RevenCachePointData> cache_;
  std::vector<Frame> frames_;
  std::uint32_t at_ = 0;  // current instruction
  std::uint64_t rip_ = 0, rsp_ = 0;
  std::uint32_t flags_ = 0x202;
  unsigned top_ = 0;
  std::uint8_t valid_ = 0;  // x87 valid mask
  std::uint64_t stores_ = 0;
  std::uint64_t resume_ = 0;  // rip to return to from the far handler
};

}  // namespace backstep::core::testing
