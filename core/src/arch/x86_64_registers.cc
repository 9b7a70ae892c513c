// The x86-64 register table. Ids are stable: gdb's amd64 registers first, in
// regnum order (RegisterId == gdb regnum for 0..148), then system registers.
// Changing the order changes persisted keyframes: append only.

#include <string>

#include "arch/table_builder.h"
#include "arch/x86_64_ids.h"
#include "backstep/core/arch.h"

namespace backstep::core {
namespace {

void AddGdbCore(TableBuilder& b) {
  // gdb's order, with psABI DWARF numbers.
  struct Gpr {
    std::string_view name;
    int dwarf;
    std::string_view type;
  };
  static constexpr Gpr kGprs[] = {
      {"rax", 0, "int64"}, {"rbx", 3, "int64"}, {"rcx", 2, "int64"},    {"rdx", 1, "int64"},
      {"rsi", 4, "int64"}, {"rdi", 5, "int64"}, {"rbp", 6, "data_ptr"}, {"rsp", 7, "data_ptr"},
  };
  for (const Gpr& g : kGprs) {
    RegisterInfo& r = b.Add(g.name, 8, kFeatureCore, g.type, "general", g.dwarf);
    if (g.name == "rbp") r.role = RegisterRole::kFp;
    if (g.name == "rsp") r.role = RegisterRole::kSp;
  }
  b.AddSeries("r", 8, 8, "", 8, kFeatureCore, "int64", "general", 8);
  b.Add("rip", 8, kFeatureCore, "code_ptr", "general", 16).role = RegisterRole::kPc;
  b.Add("eflags", 4, kFeatureCore, "i386_eflags", "general", 49).role = RegisterRole::kFlags;
  // Selectors, with their psABI numbers (es 50 cs 51 ss 52 ds 53 fs 54 gs 55).
  b.Add("cs", 4, kFeatureCore, "int32", "general", 51);
  b.Add("ss", 4, kFeatureCore, "int32", "general", 52);
  b.Add("ds", 4, kFeatureCore, "int32", "general", 53);
  b.Add("es", 4, kFeatureCore, "int32", "general", 50);
  b.Add("fs", 4, kFeatureCore, "int32", "general", 54);
  b.Add("gs", 4, kFeatureCore, "int32", "general", 55);
  for (int i = 0; i < 8; ++i) {
    RegisterInfo& r =
        b.Add(b.Intern("st" + std::to_string(i)), 10, kFeatureCore, "i387_ext", "float", 33 + i);
    r.derived = true;
  }
  b.Add("fctrl", 4, kFeatureCore, "int", "float", 65).alias = "x87control";
  b.Add("fstat", 4, kFeatureCore, "int", "float", 66);
  b.Add("ftag", 4, kFeatureCore, "int", "float");
  b.Add("fiseg", 4, kFeatureCore, "int", "float");
  b.Add("fioff", 4, kFeatureCore, "int", "float").alias = "x87lastip";
  b.Add("foseg", 4, kFeatureCore, "int", "float");
  b.Add("fooff", 4, kFeatureCore, "int", "float").alias = "x87lastdp";
  b.Add("fop", 4, kFeatureCore, "int", "float").alias = "x87opcode";
}

void AddGdbExtensions(TableBuilder& b) {
  b.AddSeries("xmm", 0, 16, "", 16, kFeatureSse, "vec128", "vector", 17);
  b.Add("mxcsr", 4, kFeatureSse, "i386_mxcsr", "vector", 64);
  b.Add("orig_rax", 8, kFeatureLinux, "int", "system");
  b.Add("fs_base", 8, kFeatureSegments, "int", "general", 58).alias = "msr_c0000100";
  b.Add("gs_base", 8, kFeatureSegments, "int", "general", 59).alias = "msr_c0000101";
  // NOTE: no group for the ymmNh/zmmNh halves, as in gdb's own feature
  // files: gdb shows them only through its ymm/zmm pseudo registers, and a
  // group would list the raw halves too in `info registers vector`.
  b.AddSeries("ymm", 0, 16, "h", 16, kFeatureAvx, "uint128", "");
  b.AddSeries("xmm", 16, 16, "", 16, kFeatureAvx512, "vec128", "vector", 67);
  b.AddSeries("ymm", 16, 16, "h", 16, kFeatureAvx512, "uint128", "");
  b.AddSeries("k", 0, 8, "", 8, kFeatureAvx512, "uint64", "vector", 118);
  b.AddSeries("zmm", 0, 32, "h", 32, kFeatureAvx512, "v2ui128", "");
  b.Add("pkru", 4, kFeaturePkeys, "uint32", "general");
}

void AddSystem(TableBuilder& b) {
  for (int i = 0; i < 8; ++i) {
    RegisterInfo& r = b.Add(b.Intern("fpr" + std::to_string(i)), 10, 0, "i387_ext", "system");
    r.alias = b.Intern("x87r" + std::to_string(i));
  }
  for (int n : {0, 2, 3, 4, 8}) b.Add(b.Intern("cr" + std::to_string(n)), 8, 0, "uint64", "system");
  for (int n : {0, 1, 2, 3, 6, 7}) {
    b.Add(b.Intern("dr" + std::to_string(n)), 8, 0, "uint64", "system");
  }
  b.Add("efer", 8, 0, "uint64", "system").alias = "msr_c0000080";
  for (std::string_view s : {"cs", "ds", "es", "ss", "fs", "gs"}) {
    b.Add(b.Intern(std::string(s) + "_shadow"), 8, 0, "uint64", "system");
  }
  struct Table {
    std::string_view name;
    std::uint16_t limit_size;
  };
  for (const Table& t : {Table{"gdtr", 2}, Table{"ldtr", 3}, Table{"idtr", 2}, Table{"tr", 3}}) {
    b.Add(b.Intern(std::string(t.name) + "_base"), 8, 0, "uint64", "system");
    b.Add(b.Intern(std::string(t.name) + "_limit"), t.limit_size, 0, "int", "system");
  }
  // Every MSR REVEN's producers record (docs/formats/reven.md §1.5), except EFER and
  // the FS/GS bases, which are aliases of efer/fs_base/gs_base.
  for (std::uint32_t msr : {0x174u, 0x175u, 0x176u, 0x1bu, 0xc0000081u, 0x277u, 0x198u, 0xc0000082u,
                            0xc0000083u, 0xc0000084u, 0xc0000102u, 0xc0000103u}) {
    b.AddMsr(msr);
  }
  for (std::uint32_t msr = 0x200; msr <= 0x20f; ++msr) b.AddMsr(msr);
  for (std::uint32_t msr : {0x250u, 0x258u, 0x259u}) b.AddMsr(msr);
  for (std::uint32_t msr = 0x268; msr <= 0x26f; ++msr) b.AddMsr(msr);
  for (std::uint32_t msr : {0x2ffu, 0xfeu, 0x179u, 0x17bu, 0x17au, 0x1a0u, 0xd90u}) b.AddMsr(msr);
  for (std::uint32_t msr = 0x400; msr <= 0x427; ++msr) b.AddMsr(msr);  // mc0..mc9
  for (std::uint32_t msr : {0x6e0u, 0xda0u}) b.AddMsr(msr);            // Bochs extras
  // Windows' per-thread LastError (x64dbg traces record it): not a CPU
  // register, so gdb never sees it; `backstep dump` and monitor commands do.
  b.Add("lasterror", 4, 0, "uint32", "system");
}

}  // namespace

const ArchDescription& X86_64() {
  static const ArchDescription* const arch = [] {
    // Both leak on purpose: the names must outlive every static destructor
    // that might still look at the table.
    static TableBuilder* const builder = new TableBuilder;
    AddGdbCore(*builder);
    AddGdbExtensions(*builder);
    AddSystem(*builder);
    return new ArchDescription("i386:x86-64", builder->Take());
  }();
  return *arch;
}

}  // namespace backstep::core
