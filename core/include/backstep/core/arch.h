// ArchDescription: the one table of an architecture's registers.
//
// Every register backstep knows is listed once, with its name, size, gdb
// register number and feature, DWARF number and generic role. gdb's
// target.xml, the `g` packet layout, tfile R blocks, LLDB's register info and
// every reader's mapping from its own register ids are derived from this
// table. Outside the table, registers are referred to by RegisterId, never by
// name.
//
// Storage model (x86-64 and i386): the register file stores the x87 registers
// in *physical* order (fpr0..fpr7 = R0..R7, system registers) and `fstat`
// with its TOP field; gdb's st0..st7 (ST(i) = R[(TOP+i) & 7]) are *derived*
// registers that have a gdb number but no storage. zmm registers are stored
// as their gdb pieces (xmmN, ymmNh, zmmNh).
//
// Thread-safety: descriptions are immutable after construction and may be
// shared freely between threads.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace backstep::core {

// Index of a register in its ArchDescription::registers().
using RegisterId = std::uint16_t;
inline constexpr RegisterId kNoRegister = 0xffff;

enum class RegisterRole : unsigned char { kNone, kPc, kSp, kFp, kFlags };

// Bits of ArchDescription features, in gdb's amd64 order.
enum GdbFeature : std::uint32_t {
  kFeatureCore = 1u << 0,      // org.gnu.gdb.i386.core
  kFeatureSse = 1u << 1,       // org.gnu.gdb.i386.sse
  kFeatureLinux = 1u << 2,     // org.gnu.gdb.i386.linux (orig_rax / orig_eax)
  kFeatureSegments = 1u << 3,  // org.gnu.gdb.i386.segments (fs_base, gs_base)
  kFeatureAvx = 1u << 4,       // org.gnu.gdb.i386.avx (ymmNh)
  kFeatureAvx512 = 1u << 5,    // org.gnu.gdb.i386.avx512
  kFeaturePkeys = 1u << 6,     // org.gnu.gdb.i386.pkeys
};

struct RegisterInfo {
  std::string_view name;      // canonical (gdb) name: "rax", "fs_base", "cr3", "fpr0"
  std::uint16_t size = 0;     // bytes
  int gdb_regnum = -1;        // gdb register number; -1: not in gdb's register set
  std::uint32_t feature = 0;  // GdbFeature bit for gdb registers; 0 for system registers
  int dwarf = -1;             // DWARF register number; -1: none
  RegisterRole role = RegisterRole::kNone;
  std::string_view gdb_type;         // tdesc type: "int64", "code_ptr", "i387_ext", "vec128", ...
  std::string_view group;            // tdesc group: "general", "float", "vector", "system"
  std::string_view alias;            // another producer's name for it ("msr_c0000100"), or ""
  bool derived = false;              // no storage; computed from others (st0..st7)
  std::uint32_t storage_offset = 0;  // byte offset in RegisterFile storage (not for derived)
};

// One register of a gdb `g` packet / tfile R block.
struct GdbSlot {
  int regnum;
  RegisterId reg;
  std::uint32_t offset;  // byte offset in the block
  std::uint16_t size;
};

// How an architecture names itself outside the register table.
struct ArchNaming {
  // Prefix of the target-description annexes, as gdb's feature files are
  // named: "64bit-" (64bit-core.xml, ...) or "32bit-".
  std::string_view tdesc_file_prefix = "64bit-";
  // CPU part of the LLVM triple LLDB expects ("x86_64", "i386").
  std::string_view triple_cpu = "x86_64";
};

// The x87 register stack of a table that has one: st0..st7 derived from
// fpr0..fpr7 (consecutive ids each) and fstat's TOP field.
struct X87Stack {
  RegisterId st0 = kNoRegister;
  RegisterId fpr0 = kNoRegister;
  RegisterId fstat = kNoRegister;
};

class ArchDescription {
 public:
  // Builds the table; computes storage offsets. `name` as gdb's
  // <architecture> ("i386:x86-64", "i386").
  ArchDescription(std::string_view name, std::vector<RegisterInfo> registers,
                  ArchNaming naming = {});

  std::string_view name() const { return name_; }
  std::span<const RegisterInfo> registers() const { return registers_; }
  const RegisterInfo& info(RegisterId id) const { return registers_[id]; }
  std::size_t register_count() const { return registers_.size(); }
  // Bytes of storage for one thread's registers.
  std::uint32_t storage_size() const { return storage_size_; }

  // Lookup by canonical name or alias; nullopt when unknown.
  std::optional<RegisterId> Find(std::string_view name) const;
  // Lookup by gdb register number; nullopt when unknown.
  std::optional<RegisterId> FindGdb(int regnum) const;
  RegisterId pc() const { return pc_; }
  RegisterId sp() const { return sp_; }
  RegisterId fp() const { return fp_; }
  RegisterId flags() const { return flags_; }
  // Bytes of an address: the size of the pc register (8 or 4).
  std::uint16_t pointer_size() const;
  // Found by name ("st0", "fpr0", "fstat") when the table is built; all
  // kNoRegister for a table without an x87 stack.
  const X87Stack& x87() const { return x87_; }
  const ArchNaming& naming() const { return naming_; }

  // The `g` packet / R block layout for a set of GdbFeature bits: gdb
  // registers of those features in regnum order, without padding.
  std::vector<GdbSlot> GdbLayout(std::uint32_t features) const;
  // Total bytes of that layout.
  std::uint32_t GdbBlockSize(std::uint32_t features) const;

  // Target-description documents for `features`, as (annex, xml) pairs:
  // first "target.xml" (architecture + xi:include lines only, which LLDB
  // needs), then one document per feature ("64bit-core.xml", ...).
  std::vector<std::pair<std::string, std::string>> TargetXml(std::uint32_t features) const;

 private:
  std::string name_;
  ArchNaming naming_;
  std::vector<RegisterInfo> registers_;
  X87Stack x87_;
  std::uint32_t storage_size_ = 0;
  RegisterId pc_ = kNoRegister, sp_ = kNoRegister, fp_ = kNoRegister, flags_ = kNoRegister;
};

// The x86-64 table: gdb's amd64 set (core, sse, linux, segments, avx,
// avx512, pkeys) plus the system registers REVEN records (control, debug,
// descriptor tables, segment shadows, MSRs, physical x87 registers).
const ArchDescription& X86_64();

// Every GdbFeature bit that X86_64() defines.
inline constexpr std::uint32_t kAllX86_64Features = kFeatureCore | kFeatureSse | kFeatureLinux |
                                                    kFeatureSegments | kFeatureAvx |
                                                    kFeatureAvx512 | kFeaturePkeys;
// The layout backstep serves by default (works with gdb 13, LLDB 19 and 22).
inline constexpr std::uint32_t kDefaultX86_64Features =
    kFeatureCore | kFeatureSse | kFeatureLinux | kFeatureSegments | kFeatureAvx;

// The i386 table: gdb's i386 GNU/Linux set (core, sse, linux, avx) plus
// system registers (physical x87 registers, fs_base/gs_base, debug
// registers; no segments feature: gdb 13 cannot load it for i386). Its
// target.xml names the architecture "i386" and uses gdb's 32bit-*.xml
// annexes.
const ArchDescription& I386();

// Every GdbFeature bit that I386() defines.
inline constexpr std::uint32_t kAllI386Features =
    kFeatureCore | kFeatureSse | kFeatureLinux | kFeatureAvx;
// The layout backstep serves for i386 traces (gdb 13, LLDB 19).
inline constexpr std::uint32_t kDefaultI386Features = kAllI386Features;

// The features backstep serves for `arch` by default: kDefaultX86_64Features
// or kDefaultI386Features (every feature the table has, otherwise).
std::uint32_t DefaultGdbFeatures(const ArchDescription& arch);

}  // namespace backstep::core
