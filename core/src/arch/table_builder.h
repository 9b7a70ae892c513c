// TableBuilder: helper for the register tables (x86_64_registers.cc,
// i386_registers.cc). Assigns gdb register numbers in the order registers
// are added (only to registers with a feature) and owns generated names.
//
// Thread-safety: used once, while a table is built under a function-local
// static's initialization.
#pragma once

#include <deque>
#include <string>
#include <string_view>
#include <vector>

#include "backstep/core/arch.h"
#include "backstep/core/hex.h"

namespace backstep::core {

// Owns the names of generated entries ("r8", "msr_00000174"); RegisterInfo
// holds string_views into it for the life of the program.
class TableBuilder {
 public:
  std::string_view Intern(std::string s) { return names_.emplace_back(std::move(s)); }

  RegisterInfo& Add(std::string_view name, std::uint16_t size, std::uint32_t feature,
                    std::string_view type, std::string_view group, int dwarf = -1) {
    RegisterInfo r;
    r.name = name;
    r.size = size;
    r.feature = feature;
    r.gdb_regnum = feature != 0 ? next_regnum_++ : -1;
    r.gdb_type = type;
    r.group = group;
    r.dwarf = dwarf;
    return regs_.emplace_back(r);
  }
  // `count` registers named prefix0, prefix1, ... (+ suffix), DWARF numbers
  // dwarf0 + i when dwarf0 >= 0.
  void AddSeries(std::string_view prefix, int first, int count, std::string_view suffix,
                 std::uint16_t size, std::uint32_t feature, std::string_view type,
                 std::string_view group, int dwarf0 = -1) {
    for (int i = 0; i < count; ++i) {
      std::string name = std::string(prefix) + std::to_string(first + i) + std::string(suffix);
      Add(Intern(std::move(name)), size, feature, type, group, dwarf0 >= 0 ? dwarf0 + i : -1);
    }
  }
  // A model-specific register named msr_XXXXXXXX (8 bytes, system).
  void AddMsr(std::uint32_t index) {
    std::string name = "msr_" + HexPadded(index, 8).substr(2);
    Add(Intern(std::move(name)), 8, 0, "uint64", "system");
  }
  std::vector<RegisterInfo> Take() { return std::move(regs_); }

 private:
  std::deque<std::string> names_;  // deque: stable addresses
  std::vector<RegisterInfo> regs_;
  int next_regnum_ = 0;
};

}  // namespace backstep::core
