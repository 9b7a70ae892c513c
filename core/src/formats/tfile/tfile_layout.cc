#include "formats/tfile/tfile_layout.h"

#include <algorithm>
#include <array>
#include <cassert>
#include <cstring>

namespace backstep::core {
namespace {

struct X87Ids {
  std::array<RegisterId, 8> st{}, fpr{};
  RegisterId fstat = kNoRegister;
};

// Resolved by name once (the sanctioned way: ArchDescription::Find).
const X87Ids& X87() {
  static const X87Ids ids = [] {
    X87Ids x;
    for (int i = 0; i < 8; ++i) {
      x.st[i] = X86_64().Find("st" + std::to_string(i)).value_or(kNoRegister);
      x.fpr[i] = X86_64().Find("fpr" + std::to_string(i)).value_or(kNoRegister);
    }
    x.fstat = X86_64().Find("fstat").value_or(kNoRegister);
    return x;
  }();
  return ids;
}

// gdb's amd64 feature sets, each adding one feature, in gdb's order.
constexpr std::uint32_t kCumulative[] = {
    kFeatureCore | kFeatureSse,
    kFeatureCore | kFeatureSse | kFeatureLinux,
    kFeatureCore | kFeatureSse | kFeatureLinux | kFeatureSegments,
    kFeatureCore | kFeatureSse | kFeatureLinux | kFeatureSegments | kFeatureAvx,
    kFeatureCore | kFeatureSse | kFeatureLinux | kFeatureSegments | kFeatureAvx | kFeatureAvx512,
    kAllX86_64Features,
};

std::string FeatureNames(std::uint32_t features) {
  static constexpr std::pair<std::uint32_t, std::string_view> kNames[] = {
      {kFeatureCore, "core"},         {kFeatureSse, "sse"}, {kFeatureLinux, "linux"},
      {kFeatureSegments, "segments"}, {kFeatureAvx, "avx"}, {kFeatureAvx512, "avx512"},
      {kFeaturePkeys, "pkeys"},
  };
  std::string out;
  for (const auto& [bit, name] : kNames) {
    if (features & bit) out += (out.empty() ? "" : "+") + std::string(name);
  }
  return out;
}

unsigned Top(std::span<const std::uint8_t> fstat) {
  return (static_cast<unsigned>(fstat[1]) >> 3) & 7;  // fstat bits 11..13
}

}  // namespace

Expected<TfileRegisterLayout> TfileRegisterLayout::FromTdesc(const Tdesc& tdesc,
                                                             std::uint64_t block_size) {
  const bool x86_64 = tdesc.architecture.empty()
                          ? std::any_of(tdesc.registers.begin(), tdesc.registers.end(),
                                        [](const TdescRegister& r) { return r.name == "rip"; })
                          : tdesc.architecture.starts_with("i386:x86-64");
  if (!x86_64) {
    return Status::Unsupported(
        tdesc.architecture.empty()
            ? "the target description names no architecture and has no rip register"
            : "architecture '" + tdesc.architecture +
                  "' is not supported (backstep reads x86-64 tfiles only)");
  }
  std::vector<const TdescRegister*> sorted;
  for (const TdescRegister& r : tdesc.registers) sorted.push_back(&r);
  std::stable_sort(
      sorted.begin(), sorted.end(),
      [](const TdescRegister* a, const TdescRegister* b) { return a->regnum < b->regnum; });
  TfileRegisterLayout layout;
  layout.block_size_ = block_size;
  std::uint64_t offset = 0;
  for (const TdescRegister* r : sorted) {
    TfileRegisterSlot slot;
    slot.name = r->name;
    slot.regnum = r->regnum;
    slot.offset = static_cast<std::uint32_t>(std::min<std::uint64_t>(offset, 0xffffffffu));
    slot.size = r->bitsize / 8;
    offset += slot.size;
    layout.slots_.push_back(std::move(slot));
  }
  layout.description_ =
      "tdesc " + (tdesc.architecture.empty() ? "(no architecture)" : tdesc.architecture) + ": " +
      std::to_string(sorted.size()) + " registers, " + std::to_string(offset) + " bytes";
  layout.Map();
  return layout;
}

TfileRegisterLayout TfileRegisterLayout::ForBlockSize(std::uint64_t block_size) {
  std::uint32_t chosen = kCumulative[std::size(kCumulative) - 1];
  for (std::uint32_t features : kCumulative) {
    if (X86_64().GdbBlockSize(features) >= block_size) {
      chosen = features;
      break;
    }
  }
  TfileRegisterLayout layout = ForFeatures(chosen);
  const bool exact = layout.block_size_ == block_size;
  layout.description_ = "no tdesc: assumed gdb's amd64 layout " + FeatureNames(chosen) + " (" +
                        std::to_string(layout.block_size_) + " bytes" +
                        (exact ? "" : ", the R size matches no known layout") + ")";
  layout.block_size_ = block_size;
  layout.notes_.clear();
  layout.Map();
  return layout;
}

TfileRegisterLayout TfileRegisterLayout::ForFeatures(std::uint32_t features) {
  TfileRegisterLayout layout;
  for (const GdbSlot& s : X86_64().GdbLayout(features)) {
    layout.slots_.push_back({std::string(X86_64().info(s.reg).name), s.regnum, s.offset, s.size});
  }
  layout.block_size_ = X86_64().GdbBlockSize(features);
  layout.description_ = "backstep amd64 layout " + FeatureNames(features) + " (" +
                        std::to_string(layout.block_size_) + " bytes)";
  layout.Map();
  return layout;
}

void TfileRegisterLayout::Map() {
  const X87Ids& x87 = X87();
  std::string past_end;
  std::uint64_t end = 0;
  fstat_slot_ = -1;
  for (std::size_t i = 0; i < slots_.size(); ++i) {
    TfileRegisterSlot& slot = slots_[i];
    slot.reg = kNoRegister;
    slot.st_index = -1;
    end = std::max<std::uint64_t>(end, std::uint64_t{slot.offset} + slot.size);
    const auto id = X86_64().Find(slot.name);
    if (!id) {
      unmapped_.push_back(slot.name);
      continue;
    }
    if (X86_64().info(*id).size != slot.size) {
      notes_.push_back("register " + slot.name + " is " + std::to_string(slot.size) +
                       " bytes in the tdesc, " + std::to_string(X86_64().info(*id).size) +
                       " in backstep's table: ignored");
      continue;
    }
    if (std::uint64_t{slot.offset} + slot.size > block_size_) {
      past_end += (past_end.empty() ? "" : " ") + slot.name;
      continue;
    }
    const auto st = std::find(x87.st.begin(), x87.st.end(), *id);
    if (st != x87.st.end()) {
      slot.st_index = static_cast<int>(st - x87.st.begin());
    } else if (X86_64().info(*id).derived) {
      continue;
    }
    if (*id == x87.fstat) fstat_slot_ = static_cast<int>(i);
    slot.reg = *id;
  }
  if (!past_end.empty()) notes_.push_back("past the R size, unavailable: " + past_end);
  if (end < block_size_) {
    notes_.push_back(std::to_string(block_size_ - end) +
                     " bytes at the end of the R block ignored");
  }
}

void TfileRegisterLayout::Decode(std::span<const std::uint8_t> block,
                                 std::vector<RegisterWrite>* out) const {
  auto fits = [&](const TfileRegisterSlot& s) {
    return std::uint64_t{s.offset} + s.size <= block.size();
  };
  const bool have_top = fstat_slot_ >= 0 && fits(slots_[fstat_slot_]);
  const unsigned top = have_top ? Top(block.subspan(slots_[fstat_slot_].offset, 4)) : 0;
  for (const TfileRegisterSlot& s : slots_) {
    if (s.reg == kNoRegister || !fits(s)) continue;
    if (s.st_index >= 0 && !have_top) continue;
    RegisterWrite& w = out->emplace_back();
    w.reg = s.st_index >= 0 ? X87().fpr[(top + s.st_index) & 7] : s.reg;
    w.op = RegisterOp::kSet;
    std::memcpy(w.value, block.data() + s.offset, s.size);
  }
}

std::vector<std::uint8_t> TfileRegisterLayout::Encode(const RegisterFile& regs) const {
  assert(&regs.arch() == &X86_64());
  std::vector<std::uint8_t> block(block_size_, 0);
  const RegisterId fstat = X87().fstat;
  const unsigned top = regs.known(fstat) ? Top(regs.bytes(fstat)) : 0;
  for (const TfileRegisterSlot& s : slots_) {
    if (s.reg == kNoRegister) continue;  // past the R size or unknown: zeros
    const RegisterId src = s.st_index >= 0 ? X87().fpr[(top + s.st_index) & 7] : s.reg;
    const auto bytes = regs.bytes(src);  // zeros when unknown
    std::memcpy(block.data() + s.offset, bytes.data(), s.size);
  }
  return block;
}

}  // namespace backstep::core
