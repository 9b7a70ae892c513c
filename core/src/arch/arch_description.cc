#include <algorithm>
#include <cassert>
#include <string>
#include <utility>

#include "backstep/core/arch.h"

namespace backstep::core {

ArchDescription::ArchDescription(std::string_view name, std::vector<RegisterInfo> registers,
                                 ArchNaming naming)
    : name_(name), naming_(naming), registers_(std::move(registers)) {
  assert(registers_.size() < kNoRegister);
  std::uint32_t offset = 0;
  for (std::size_t i = 0; i < registers_.size(); ++i) {
    RegisterInfo& r = registers_[i];
    const auto id = static_cast<RegisterId>(i);
    if (r.derived) {
      r.storage_offset = 0;
    } else {
      r.storage_offset = offset;
      offset += r.size;
    }
    // The first register of each role wins; a table should name one per role.
    switch (r.role) {
      case RegisterRole::kPc:
        if (pc_ == kNoRegister) pc_ = id;
        break;
      case RegisterRole::kSp:
        if (sp_ == kNoRegister) sp_ = id;
        break;
      case RegisterRole::kFp:
        if (fp_ == kNoRegister) fp_ = id;
        break;
      case RegisterRole::kFlags:
        if (flags_ == kNoRegister) flags_ = id;
        break;
      case RegisterRole::kNone:
        break;
    }
  }
  storage_size_ = offset;
  // The x87 stack is used only when it is complete: eight derived st(i) and
  // eight stored fpr(j) at consecutive ids, and fstat.
  const auto st0 = Find("st0"), fpr0 = Find("fpr0"), fstat = Find("fstat");
  if (st0 && fpr0 && fstat && *st0 + 8u <= registers_.size() && *fpr0 + 8u <= registers_.size()) {
    bool complete = !registers_[*fstat].derived;
    for (int i = 0; i < 8; ++i) {
      const RegisterInfo& st = registers_[*st0 + i];
      const RegisterInfo& fpr = registers_[*fpr0 + i];
      complete = complete && st.derived && st.name == "st" + std::to_string(i) && !fpr.derived &&
                 fpr.name == "fpr" + std::to_string(i) && st.size == fpr.size;
    }
    if (complete) x87_ = X87Stack{*st0, *fpr0, *fstat};
  }
}

std::uint16_t ArchDescription::pointer_size() const {
  return pc_ == kNoRegister ? 0 : registers_[pc_].size;
}

std::uint32_t DefaultGdbFeatures(const ArchDescription& arch) {
  if (&arch == &X86_64()) return kDefaultX86_64Features;
  if (&arch == &I386()) return kDefaultI386Features;
  std::uint32_t features = 0;
  for (const RegisterInfo& r : arch.registers()) features |= r.feature;
  return features;
}

std::optional<RegisterId> ArchDescription::Find(std::string_view name) const {
  if (name.empty()) return std::nullopt;
  // NOTE: a linear scan (~300 entries); readers resolve names once at open.
  for (std::size_t i = 0; i < registers_.size(); ++i) {
    if (registers_[i].name == name || registers_[i].alias == name) {
      return static_cast<RegisterId>(i);
    }
  }
  return std::nullopt;
}

std::optional<RegisterId> ArchDescription::FindGdb(int regnum) const {
  if (regnum < 0) return std::nullopt;
  // Tables list gdb registers first in regnum order, so the id usually is the
  // regnum; fall back to a scan for tables that do not.
  if (static_cast<std::size_t>(regnum) < registers_.size() &&
      registers_[regnum].gdb_regnum == regnum) {
    return static_cast<RegisterId>(regnum);
  }
  for (std::size_t i = 0; i < registers_.size(); ++i) {
    if (registers_[i].gdb_regnum == regnum) return static_cast<RegisterId>(i);
  }
  return std::nullopt;
}

std::vector<GdbSlot> ArchDescription::GdbLayout(std::uint32_t features) const {
  std::vector<std::pair<int, RegisterId>> selected;
  for (std::size_t i = 0; i < registers_.size(); ++i) {
    const RegisterInfo& r = registers_[i];
    if (r.gdb_regnum >= 0 && (r.feature & features) != 0) {
      selected.emplace_back(r.gdb_regnum, static_cast<RegisterId>(i));
    }
  }
  std::sort(selected.begin(), selected.end());
  std::vector<GdbSlot> slots;
  slots.reserve(selected.size());
  std::uint32_t offset = 0;
  for (const auto& [regnum, id] : selected) {
    slots.push_back(GdbSlot{regnum, id, offset, registers_[id].size});
    offset += registers_[id].size;
  }
  return slots;
}

std::uint32_t ArchDescription::GdbBlockSize(std::uint32_t features) const {
  std::uint32_t size = 0;
  for (const RegisterInfo& r : registers_) {
    if (r.gdb_regnum >= 0 && (r.feature & features) != 0) size += r.size;
  }
  return size;
}

}  // namespace backstep::core
