#include <gtest/gtest.h>

#include <set>
#include <string>

#include "arch/x86_64_ids.h"
#include "backstep/core/arch.h"

namespace backstep::core {
namespace {

RegisterId Id(std::string_view name) {
  auto id = X86_64().Find(name);
  EXPECT_TRUE(id.has_value()) << name;
  return id.value_or(kNoRegister);
}

TEST(X86_64Test, GdbRegistersComeFirstInRegnumOrder) {
  const ArchDescription& a = X86_64();
  for (int regnum = 0; regnum <= 148; ++regnum) {
    ASSERT_EQ(a.info(static_cast<RegisterId>(regnum)).gdb_regnum, regnum);
    EXPECT_EQ(a.FindGdb(regnum), static_cast<RegisterId>(regnum));
  }
  for (std::size_t i = 149; i < a.register_count(); ++i) {
    const RegisterInfo& r = a.info(static_cast<RegisterId>(i));
    EXPECT_EQ(r.gdb_regnum, -1) << r.name;
    EXPECT_EQ(r.feature, 0u) << r.name;
    EXPECT_EQ(r.group, "system") << r.name;
    EXPECT_FALSE(r.derived) << r.name;
  }
  EXPECT_FALSE(a.FindGdb(149).has_value());
  EXPECT_FALSE(a.FindGdb(-1).has_value());
}

TEST(X86_64Test, NamesSizesAndFeatures) {
  struct Row {
    const char* name;
    int regnum;
    int size;
    std::uint32_t feature;
  };
  const Row rows[] = {
      {"rax", 0, 8, kFeatureCore},          {"rbx", 1, 8, kFeatureCore},
      {"rsp", 7, 8, kFeatureCore},          {"r8", 8, 8, kFeatureCore},
      {"r15", 15, 8, kFeatureCore},         {"rip", 16, 8, kFeatureCore},
      {"eflags", 17, 4, kFeatureCore},      {"cs", 18, 4, kFeatureCore},
      {"gs", 23, 4, kFeatureCore},          {"st0", 24, 10, kFeatureCore},
      {"st7", 31, 10, kFeatureCore},        {"fctrl", 32, 4, kFeatureCore},
      {"fop", 39, 4, kFeatureCore},         {"xmm0", 40, 16, kFeatureSse},
      {"xmm15", 55, 16, kFeatureSse},       {"mxcsr", 56, 4, kFeatureSse},
      {"orig_rax", 57, 8, kFeatureLinux},   {"fs_base", 58, 8, kFeatureSegments},
      {"gs_base", 59, 8, kFeatureSegments}, {"ymm0h", 60, 16, kFeatureAvx},
      {"ymm15h", 75, 16, kFeatureAvx},      {"xmm16", 76, 16, kFeatureAvx512},
      {"xmm31", 91, 16, kFeatureAvx512},    {"ymm16h", 92, 16, kFeatureAvx512},
      {"ymm31h", 107, 16, kFeatureAvx512},  {"k0", 108, 8, kFeatureAvx512},
      {"k7", 115, 8, kFeatureAvx512},       {"zmm0h", 116, 32, kFeatureAvx512},
      {"zmm31h", 147, 32, kFeatureAvx512},  {"pkru", 148, 4, kFeaturePkeys},
  };
  for (const Row& row : rows) {
    RegisterId id = Id(row.name);
    EXPECT_EQ(id, row.regnum) << row.name;
    EXPECT_EQ(X86_64().info(id).size, row.size) << row.name;
    EXPECT_EQ(X86_64().info(id).feature, row.feature) << row.name;
  }
}

TEST(X86_64Test, NamesAndAliasesAreUnique) {
  std::set<std::string_view> seen;
  for (const RegisterInfo& r : X86_64().registers()) {
    EXPECT_TRUE(seen.insert(r.name).second) << r.name;
    if (!r.alias.empty()) {
      EXPECT_TRUE(seen.insert(r.alias).second) << r.alias;
    }
  }
}

TEST(X86_64Test, Roles) {
  EXPECT_EQ(X86_64().pc(), Id("rip"));
  EXPECT_EQ(X86_64().sp(), Id("rsp"));
  EXPECT_EQ(X86_64().fp(), Id("rbp"));
  EXPECT_EQ(X86_64().flags(), Id("eflags"));
  EXPECT_EQ(X86_64().info(Id("rip")).gdb_type, "code_ptr");
  EXPECT_EQ(X86_64().info(Id("eflags")).gdb_type, "i386_eflags");
  EXPECT_EQ(X86_64().name(), "i386:x86-64");
}

TEST(X86_64Test, DwarfNumbers) {
  const std::pair<const char*, int> rows[] = {
      {"rax", 0},    {"rdx", 1},    {"rcx", 2},    {"rbx", 3},     {"rsi", 4},      {"rdi", 5},
      {"rbp", 6},    {"rsp", 7},    {"r8", 8},     {"r15", 15},    {"rip", 16},     {"xmm0", 17},
      {"xmm15", 32}, {"st0", 33},   {"st7", 40},   {"eflags", 49}, {"es", 50},      {"cs", 51},
      {"ss", 52},    {"ds", 53},    {"fs", 54},    {"gs", 55},     {"fs_base", 58}, {"gs_base", 59},
      {"mxcsr", 64}, {"fctrl", 65}, {"fstat", 66}, {"xmm16", 67},  {"xmm31", 82},   {"k0", 118},
  };
  for (const auto& [name, dwarf] : rows) EXPECT_EQ(X86_64().info(Id(name)).dwarf, dwarf) << name;
  EXPECT_EQ(X86_64().info(Id("cr3")).dwarf, -1);
}

TEST(X86_64Test, AliasesResolveToCanonicalRegisters) {
  const std::pair<const char*, const char*> rows[] = {
      {"msr_c0000100", "fs_base"}, {"msr_c0000101", "gs_base"}, {"msr_c0000080", "efer"},
      {"x87control", "fctrl"},     {"x87opcode", "fop"},        {"x87lastip", "fioff"},
      {"x87lastdp", "fooff"},      {"x87r0", "fpr0"},           {"x87r7", "fpr7"},
  };
  for (const auto& [alias, name] : rows) EXPECT_EQ(Id(alias), Id(name)) << alias;
  EXPECT_FALSE(X86_64().Find("").has_value());
  EXPECT_FALSE(X86_64().Find("rflags").has_value());
  EXPECT_FALSE(X86_64().Find("msr_c0000080x").has_value());
}

TEST(X86_64Test, SystemRegisters) {
  const std::pair<const char*, int> rows[] = {
      {"fpr0", 10},        {"cr0", 8},          {"cr2", 8},          {"cr3", 8},
      {"cr4", 8},          {"cr8", 8},          {"dr0", 8},          {"dr7", 8},
      {"efer", 8},         {"cs_shadow", 8},    {"gs_shadow", 8},    {"gdtr_base", 8},
      {"gdtr_limit", 2},   {"ldtr_base", 8},    {"ldtr_limit", 3},   {"idtr_base", 8},
      {"idtr_limit", 2},   {"tr_base", 8},      {"tr_limit", 3},     {"msr_00000174", 8},
      {"msr_0000001b", 8}, {"msr_c0000081", 8}, {"msr_c0000103", 8}, {"msr_00000200", 8},
      {"msr_0000020f", 8}, {"msr_0000026c", 8}, {"msr_00000d90", 8}, {"msr_00000400", 8},
      {"msr_00000427", 8}, {"msr_000006e0", 8}, {"msr_00000da0", 8}, {"msr_000000fe", 8},
  };
  for (const auto& [name, size] : rows) {
    RegisterId id = Id(name);
    EXPECT_GE(id, 149) << name;
    EXPECT_EQ(X86_64().info(id).size, size) << name;
  }
  EXPECT_EQ(Id("fpr0"), x86_64_ids::kFpr0);
  for (int i = 0; i < 8; ++i) EXPECT_EQ(Id("fpr" + std::to_string(i)), x86_64_ids::kFpr0 + i);
}

TEST(X86_64Test, IdConstantsMatchTable) {
  EXPECT_EQ(Id("rip"), x86_64_ids::kRip);
  EXPECT_EQ(Id("eflags"), x86_64_ids::kEflags);
  EXPECT_EQ(Id("st0"), x86_64_ids::kSt0);
  EXPECT_EQ(Id("fctrl"), x86_64_ids::kFctrl);
  EXPECT_EQ(Id("fstat"), x86_64_ids::kFstat);
  EXPECT_EQ(Id("pkru"), x86_64_ids::kPkru);
}

TEST(X86_64Test, StorageIsPackedAndSkipsDerived) {
  const ArchDescription& a = X86_64();
  std::uint32_t expected = 0;
  for (const RegisterInfo& r : a.registers()) {
    if (r.derived) {
      EXPECT_TRUE(r.name.starts_with("st")) << r.name;
      continue;
    }
    EXPECT_EQ(r.storage_offset, expected) << r.name;
    expected += r.size;
  }
  EXPECT_EQ(a.storage_size(), expected);
}

RegisterInfo Reg(std::string_view name, std::uint16_t size, int regnum, std::uint32_t feature) {
  RegisterInfo r;
  r.name = name;
  r.size = size;
  r.gdb_regnum = regnum;
  r.feature = feature;
  return r;
}

TEST(ArchDescriptionTest, SmallTable) {
  std::vector<RegisterInfo> regs = {Reg("a", 4, 1, 1), Reg("pc", 8, 0, 1), Reg("d", 2, 2, 2),
                                    Reg("s", 3, -1, 0)};
  regs[1].role = RegisterRole::kPc;
  regs[2].derived = true;
  regs[3].alias = "t";
  ArchDescription a("toy", std::move(regs));
  EXPECT_EQ(a.pc(), 1);
  EXPECT_EQ(a.sp(), kNoRegister);
  EXPECT_EQ(a.FindGdb(0), 1);
  EXPECT_EQ(a.FindGdb(1), 0);
  EXPECT_EQ(a.Find("t"), 3);
  EXPECT_EQ(a.info(3).storage_offset, 12u);
  EXPECT_EQ(a.storage_size(), 15u);
  auto layout = a.GdbLayout(1);
  ASSERT_EQ(layout.size(), 2u);
  EXPECT_EQ(layout[0].reg, 1);
  EXPECT_EQ(layout[1].offset, 8u);
  EXPECT_EQ(a.GdbBlockSize(3), 14u);
}

}  // namespace
}  // namespace backstep::core
