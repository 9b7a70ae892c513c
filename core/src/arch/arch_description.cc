#include <algorithm>
#include <cassert>
#include <utility>

#include "backstep/core/arch.h"

namespace backstep::core {

ArchDescription::ArchDescription(std::string_view name, std::vector<RegisterInfo> registers)
    : name_(name), registers_(std::move(registers)) {
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
