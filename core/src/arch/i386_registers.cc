// The i386 register table. Ids are stable: gdb's i386 GNU/Linux registers
// first, in regnum order (RegisterId == gdb regnum for 0..49), then system
// registers. Changing the order changes persisted keyframes: append only.
//
// The gdb part is what gdb 13 builds for an i386 GNU/Linux process
// (i386_create_target_description: 32bit-core, -sse, -linux, then -avx).
// NOTE: not gdb's 32bit-segments feature: gdb 13.1 fails an internal
// assertion (tdesc_use_registers) on an i386 description that has it, so the
// segment bases tracers record (fs_base/gs_base: TEB/TLS) are system
// registers here, visible through `monitor` but not as gdb registers.
// DWARF numbers are the i386 SysV psABI's (also GNU/Linux eh_frame's).

#include <string>

#include "arch/table_builder.h"
#include "backstep/core/arch.h"

namespace backstep::core {
namespace {

void AddGdbCore(TableBuilder& b) {
  struct Gpr {
    std::string_view name;
    int dwarf;
    std::string_view type;
    RegisterRole role;
  };
  static constexpr Gpr kGprs[] = {
      {"eax", 0, "int32", RegisterRole::kNone},  {"ecx", 1, "int32", RegisterRole::kNone},
      {"edx", 2, "int32", RegisterRole::kNone},  {"ebx", 3, "int32", RegisterRole::kNone},
      {"esp", 4, "data_ptr", RegisterRole::kSp}, {"ebp", 5, "data_ptr", RegisterRole::kFp},
      {"esi", 6, "int32", RegisterRole::kNone},  {"edi", 7, "int32", RegisterRole::kNone},
      {"eip", 8, "code_ptr", RegisterRole::kPc}, {"eflags", 9, "i386_eflags", RegisterRole::kFlags},
  };
  for (const Gpr& g : kGprs)
    b.Add(g.name, 4, kFeatureCore, g.type, "general", g.dwarf).role = g.role;
  // Selectors in gdb's order, with their psABI numbers (es 40 cs 41 ss 42 ds 43 fs 44 gs 45).
  b.Add("cs", 4, kFeatureCore, "int32", "general", 41);
  b.Add("ss", 4, kFeatureCore, "int32", "general", 42);
  b.Add("ds", 4, kFeatureCore, "int32", "general", 43);
  b.Add("es", 4, kFeatureCore, "int32", "general", 40);
  b.Add("fs", 4, kFeatureCore, "int32", "general", 44);
  b.Add("gs", 4, kFeatureCore, "int32", "general", 45);
  for (int i = 0; i < 8; ++i) {
    RegisterInfo& r =
        b.Add(b.Intern("st" + std::to_string(i)), 10, kFeatureCore, "i387_ext", "float", 11 + i);
    r.derived = true;
  }
  // The same aliases as the x86-64 table, so producers' names map alike.
  b.Add("fctrl", 4, kFeatureCore, "int", "float", 37).alias = "x87control";
  b.Add("fstat", 4, kFeatureCore, "int", "float", 38);
  b.Add("ftag", 4, kFeatureCore, "int", "float");
  b.Add("fiseg", 4, kFeatureCore, "int", "float");
  b.Add("fioff", 4, kFeatureCore, "int", "float").alias = "x87lastip";
  b.Add("foseg", 4, kFeatureCore, "int", "float");
  b.Add("fooff", 4, kFeatureCore, "int", "float").alias = "x87lastdp";
  b.Add("fop", 4, kFeatureCore, "int", "float").alias = "x87opcode";
}

void AddGdbExtensions(TableBuilder& b) {
  b.AddSeries("xmm", 0, 8, "", 16, kFeatureSse, "vec128", "vector", 21);
  b.Add("mxcsr", 4, kFeatureSse, "i386_mxcsr", "vector", 39);
  b.Add("orig_eax", 4, kFeatureLinux, "int", "system");
  // No group, as in gdb's 32bit-avx.xml (see the x86-64 table).
  b.AddSeries("ymm", 0, 8, "h", 16, kFeatureAvx, "uint128", "");
}

void AddSystem(TableBuilder& b) {
  for (int i = 0; i < 8; ++i) {
    RegisterInfo& r = b.Add(b.Intern("fpr" + std::to_string(i)), 10, 0, "i387_ext", "system");
    r.alias = b.Intern("x87r" + std::to_string(i));
  }
  // No DWARF numbers: the i386 psABI has none for the segment bases.
  b.Add("fs_base", 4, 0, "uint32", "system");
  b.Add("gs_base", 4, 0, "uint32", "system");
  for (int n : {0, 1, 2, 3, 6, 7}) {
    b.Add(b.Intern("dr" + std::to_string(n)), 4, 0, "uint32", "system");
  }
}

}  // namespace

const ArchDescription& I386() {
  static const ArchDescription* const arch = [] {
    // Both leak on purpose, as X86_64()'s: the names outlive every static
    // destructor that might still look at the table.
    static TableBuilder* const builder = new TableBuilder;
    AddGdbCore(*builder);
    AddGdbExtensions(*builder);
    AddSystem(*builder);
    return new ArchDescription("i386", builder->Take(),
                               ArchNaming{.tdesc_file_prefix = "32bit-", .triple_cpu = "i386"});
  }();
  return *arch;
}

}  // namespace backstep::core
