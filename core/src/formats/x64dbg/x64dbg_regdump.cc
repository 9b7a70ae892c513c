#include "formats/x64dbg/x64dbg_regdump.h"

#include <algorithm>
#include <cstring>

namespace backstep::core {
namespace {

constexpr std::uint16_t kDerivedSize = 284;  // booleans .. PC word; LastError follows

std::uint64_t Le(std::span<const std::uint8_t> b, std::size_t at, std::size_t n) {
  std::uint64_t v = 0;
  for (std::size_t i = 0; i < n; ++i) v |= std::uint64_t(b[at + i]) << (8 * i);
  return v;
}
void PutLe(std::span<std::uint8_t> b, std::size_t at, std::uint64_t v, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) b[at + i] = static_cast<std::uint8_t>(v >> (8 * i));
}

X64dbgDumpLayout::Spec X64Spec() {
  X64dbgDumpLayout::Spec s;
  s.arch = &X86_64();
  s.json_arch = "x64";
  s.duint = 8;
  s.slot_count = 172;
  const char* gprs[] = {"rax", "rcx", "rdx", "rbx", "rsp", "rbp", "rsi", "rdi",
                        "r8",  "r9",  "r10", "r11", "r12", "r13", "r14", "r15"};
  for (int i = 0; i < 16; ++i) s.pieces.push_back({gprs[i], std::uint16_t(8 * i), 8});
  s.pieces.push_back({"rip", 128, 8});
  s.pieces.push_back({"eflags", 136, 4});
  const char* segs[] = {"gs", "fs", "es", "ds", "cs", "ss"};
  for (int i = 0; i < 6; ++i) s.pieces.push_back({segs[i], std::uint16_t(144 + 2 * i), 2});
  const char* drs[] = {"dr0", "dr1", "dr2", "dr3", "dr6", "dr7"};
  for (int i = 0; i < 6; ++i) s.pieces.push_back({drs[i], std::uint16_t(160 + 8 * i), 8});
  s.register_area = 208;
  s.pieces.push_back({"fctrl", 288, 2});
  s.pieces.push_back({"fstat", 290, 2});
  s.pieces.push_back({"ftag", 292, 2});
  s.pieces.push_back({"fioff", 296, 4});
  s.pieces.push_back({"fiseg", 300, 4});
  s.pieces.push_back({"fooff", 304, 4});
  s.pieces.push_back({"foseg", 308, 4});
  s.pieces.push_back({"mxcsr", 316, 4});  // +312: Cr0NpxState, no register
  static const std::vector<std::string> names = [] {
    std::vector<std::string> n;
    for (int i = 0; i < 16; ++i) n.push_back("xmm" + std::to_string(i));
    for (int i = 0; i < 16; ++i) n.push_back("ymm" + std::to_string(i) + "h");
    return n;
  }();
  for (int i = 0; i < 16; ++i) {
    s.pieces.push_back({names[i], std::uint16_t(320 + 16 * i), 16});
    s.pieces.push_back({names[i], std::uint16_t(576 + 32 * i), 16, /*duplicate=*/true});
    s.pieces.push_back({names[16 + i], std::uint16_t(576 + 32 * i + 16), 16});
  }
  s.fpr_prefix = "fpr";
  s.derived_offset = 1088;
  s.pieces.push_back({"lasterror", 1088 + kDerivedSize, 4});
  return s;
}

X64dbgDumpLayout::Spec X86Spec() {
  X64dbgDumpLayout::Spec s;
  s.arch = &I386();
  s.json_arch = "x86";
  s.duint = 4;
  s.slot_count = 216;
  const char* gprs[] = {"eax", "ecx", "edx", "ebx", "esp", "ebp", "esi", "edi"};
  for (int i = 0; i < 8; ++i) s.pieces.push_back({gprs[i], std::uint16_t(4 * i), 4});
  s.pieces.push_back({"eip", 32, 4});
  s.pieces.push_back({"eflags", 36, 4});
  const char* segs[] = {"gs", "fs", "es", "ds", "cs", "ss"};
  for (int i = 0; i < 6; ++i) s.pieces.push_back({segs[i], std::uint16_t(40 + 2 * i), 2});
  const char* drs[] = {"dr0", "dr1", "dr2", "dr3", "dr6", "dr7"};
  for (int i = 0; i < 6; ++i) s.pieces.push_back({drs[i], std::uint16_t(52 + 4 * i), 4});
  s.register_area = 76;
  s.pieces.push_back({"fctrl", 156, 2});
  s.pieces.push_back({"fstat", 158, 2});
  s.pieces.push_back({"ftag", 160, 2});
  s.pieces.push_back({"fioff", 164, 4});
  s.pieces.push_back({"fiseg", 168, 4});
  s.pieces.push_back({"fooff", 172, 4});
  s.pieces.push_back({"foseg", 176, 4});
  s.pieces.push_back({"mxcsr", 184, 4});  // +180: Cr0NpxState; +188: padding
  static const std::vector<std::string> names = [] {
    std::vector<std::string> n;
    for (int i = 0; i < 8; ++i) n.push_back("xmm" + std::to_string(i));
    for (int i = 0; i < 8; ++i) n.push_back("ymm" + std::to_string(i) + "h");
    return n;
  }();
  for (int i = 0; i < 8; ++i) {
    s.pieces.push_back({names[i], std::uint16_t(192 + 16 * i), 16});
    s.pieces.push_back({names[i], std::uint16_t(320 + 32 * i), 16, /*duplicate=*/true});
    s.pieces.push_back({names[8 + i], std::uint16_t(320 + 32 * i + 16), 16});
  }
  s.fpr_prefix = "fpr";
  s.derived_offset = 576;
  s.pieces.push_back({"lasterror", 576 + kDerivedSize, 4});
  return s;
}

}  // namespace

Expected<X64dbgDumpLayout> X64dbgDumpLayout::Build(const Spec& spec) {
  X64dbgDumpLayout l;
  l.arch_ = spec.arch;
  l.json_arch_ = spec.json_arch;
  l.duint_ = spec.duint;
  l.slot_count_ = spec.slot_count;
  const ArchDescription& arch = *spec.arch;
  auto find = [&arch](std::string_view name) -> Expected<RegisterId> {
    if (auto id = arch.Find(name)) return *id;
    return Status::Unsupported("x64dbg: the " + std::string(arch.name()) +
                               " table has no register " + std::string(name));
  };
  for (const PieceSpec& p : spec.pieces) {
    BACKSTEP_ASSIGN_OR_RETURN(RegisterId id, find(p.reg));
    l.pieces_.push_back({id, p.offset, p.size, p.duplicate});
  }
  for (int j = 0; j < 8; ++j) {
    BACKSTEP_ASSIGN_OR_RETURN(l.fpr_[j], find(std::string(spec.fpr_prefix) + std::to_string(j)));
  }
  BACKSTEP_ASSIGN_OR_RETURN(l.eflags_, find(arch.info(arch.flags()).name));
  BACKSTEP_ASSIGN_OR_RETURN(l.fctrl_, find("fctrl"));
  BACKSTEP_ASSIGN_OR_RETURN(l.fstat_, find("fstat"));
  BACKSTEP_ASSIGN_OR_RETURN(l.ftag_, find("ftag"));
  BACKSTEP_ASSIGN_OR_RETURN(l.mxcsr_, find("mxcsr"));
  l.pc_ = arch.pc();
  l.sp_ = arch.sp();
  l.area_ = spec.register_area;
  l.derived_ = spec.derived_offset;
  for (const Piece& p : l.pieces_) {
    if (p.reg == l.fstat_) l.fstat_offset_ = p.offset;
  }
  if (l.item_count() > 128) {  // Decode()'s stamp array
    return Status::Unsupported("x64dbg: too many registers in the dump layout");
  }
  l.covered_.assign(l.dump_size(), 0);
  for (const Piece& p : l.pieces_) std::fill_n(l.covered_.begin() + p.offset, p.size, 1);
  std::fill_n(l.covered_.begin() + l.area_, 80, 1);
  std::fill_n(l.covered_.begin() + l.derived_, kDerivedSize, 1);
  l.items_of_.resize(l.slot_count_);
  for (std::size_t item = 0; item < l.item_count(); ++item) {
    unsigned first, last;
    if (item < l.pieces_.size()) {
      const Piece& p = l.pieces_[item];
      first = p.offset / l.duint_;
      last = (p.offset + p.size - 1) / l.duint_;
      if (p.duplicate) {
        l.slots_of_.emplace_back(first, last);
        continue;  // never read
      }
    } else {
      // fpr_j depends on the whole RegisterArea and on TOP (fstat).
      first = l.area_ / l.duint_;
      last = (l.area_ + 79) / l.duint_;
    }
    l.slots_of_.emplace_back(first, last);
    for (unsigned s = first; s <= last; ++s) l.items_of_[s].push_back(std::uint16_t(item));
    if (item >= l.pieces_.size()) {
      l.items_of_[l.fstat_offset_ / l.duint_].push_back(std::uint16_t(item));
    }
  }
  return l;
}

const X64dbgDumpLayout& X64dbgDumpLayout::X64() {
  static const X64dbgDumpLayout* const layout = [] {
    auto built = Build(X64Spec());
    return new X64dbgDumpLayout(std::move(*built));  // the x86-64 table has every register
  }();
  return *layout;
}

Expected<const X64dbgDumpLayout*> X64dbgDumpLayout::X86() {
  static const X64dbgDumpLayout* const layout = [] {
    auto built = Build(X86Spec());
    return new X64dbgDumpLayout(std::move(*built));  // the i386 table has every register
  }();
  return layout;
}

unsigned X64dbgDumpLayout::Top(std::span<const std::uint8_t> dump) const {
  return static_cast<unsigned>(Le(dump, fstat_offset_, 2) >> 11) & 7;
}

bool X64dbgDumpLayout::ItemKnown(std::size_t item, std::span<const std::uint8_t> slot_known) const {
  const auto [first, last] = slots_of_[item];
  for (unsigned s = first; s <= last; ++s) {
    if (!slot_known[s]) return false;
  }
  return item < pieces_.size() || slot_known[fstat_offset_ / duint_];
}

void X64dbgDumpLayout::ItemWrite(std::size_t item, std::span<const std::uint8_t> dump,
                                 RegisterWrite* w) const {
  *w = RegisterWrite();
  if (item < pieces_.size()) {
    const Piece& p = pieces_[item];
    w->reg = p.reg;
    const std::size_t n = std::min<std::size_t>(p.size, arch_->info(p.reg).size);
    std::memcpy(w->value, dump.data() + p.offset, n);
    return;
  }
  const unsigned j = static_cast<unsigned>(item - pieces_.size());
  w->reg = fpr_[j];
  std::memcpy(w->value, dump.data() + area_ + ((j - Top(dump)) & 7) * 10, 10);
}

void X64dbgDumpLayout::Decode(std::span<const std::uint8_t> dump,
                              std::span<const std::uint8_t> slot_known,
                              std::span<const std::uint16_t> changed,
                              std::vector<RegisterWrite>* out) const {
  // Items are few (under 100): a stamp per call keeps each one emitted once.
  std::uint8_t seen[128] = {};
  for (std::uint16_t s : changed) {
    for (std::uint16_t item : items_of_[s]) {
      if (seen[item]) continue;
      seen[item] = 1;
      if (!ItemKnown(item, slot_known)) continue;
      out->emplace_back();
      ItemWrite(item, dump, &out->back());
    }
  }
}

void X64dbgDumpLayout::DecodeAll(std::span<const std::uint8_t> dump,
                                 std::span<const std::uint8_t> slot_known,
                                 std::vector<RegisterWrite>* out) const {
  for (std::size_t item = 0; item < item_count(); ++item) {
    if (item < pieces_.size() && pieces_[item].duplicate) continue;
    if (!ItemKnown(item, slot_known)) continue;
    out->emplace_back();
    ItemWrite(item, dump, &out->back());
  }
}

void X64dbgDumpLayout::Encode(const RegisterFile& regs, std::span<std::uint8_t> dump,
                              std::span<std::uint8_t> slot_known) const {
  std::fill(dump.begin(), dump.end(), 0);
  // Padding is known (always 0); covered bytes become known when written.
  std::vector<std::uint8_t> byte_known(dump_size());
  for (std::size_t i = 0; i < byte_known.size(); ++i) byte_known[i] = !covered_[i];
  for (const Piece& p : pieces_) {
    if (!regs.known(p.reg)) continue;
    auto bytes = regs.bytes(p.reg);
    std::memcpy(dump.data() + p.offset, bytes.data(), std::min<std::size_t>(p.size, bytes.size()));
    std::fill_n(byte_known.begin() + p.offset, p.size, 1);
  }
  bool fpr_known = regs.known(fstat_);
  for (RegisterId r : fpr_) fpr_known = fpr_known && regs.known(r);
  if (fpr_known) {
    const unsigned top = static_cast<unsigned>(regs.u64(fstat_) >> 11) & 7;
    for (unsigned i = 0; i < 8; ++i) {
      std::memcpy(dump.data() + area_ + 10 * i, regs.bytes(fpr_[(top + i) & 7]).data(), 10);
    }
    std::fill_n(byte_known.begin() + area_, 80, 1);
  }
  if (fpr_known && regs.known(eflags_) && regs.known(fctrl_) && regs.known(ftag_) &&
      regs.known(mxcsr_)) {
    // The fields x64dbg derives (docs/formats/x64dbg.md §5.3), same relative layout for
    // both pointer sizes.
    const std::uint64_t fl = regs.u64(eflags_), sw = regs.u64(fstat_), cw = regs.u64(fctrl_);
    const std::uint64_t tags = regs.u64(ftag_), mx = regs.u64(mxcsr_);
    const unsigned top = static_cast<unsigned>(sw >> 11) & 7;
    const std::size_t d = derived_;
    auto bools = [&](std::size_t at, std::uint64_t word, std::initializer_list<int> bits) {
      for (int b : bits) dump[at++] = static_cast<std::uint8_t>((word >> b) & 1);
    };
    bools(d + 0, fl, {0, 2, 4, 6, 7, 8, 9, 10});
    bools(d + 8, fl, {11});
    for (unsigned j = 0; j < 8; ++j) {
      const std::size_t at = d + 12 + 20 * j;
      std::memcpy(dump.data() + at, regs.bytes(fpr_[j]).data(), 10);
      PutLe(dump, at + 12, (j - top) & 7, 4);
      PutLe(dump, at + 16, (tags >> (2 * j)) & 3, 4);
      std::memcpy(dump.data() + d + 176 + 8 * j, regs.bytes(fpr_[j]).data(), 8);
    }
    bools(d + 240, mx, {15, 12, 11, 10, 9, 7, 8, 6});
    bools(d + 248, mx, {5, 4, 3, 2, 1, 0});
    PutLe(dump, d + 254, (mx >> 13) & 3, 2);
    bools(d + 256, sw, {15, 14, 10, 9, 8, 7, 6, 5});
    bools(d + 264, sw, {4, 3, 2, 1, 0});
    PutLe(dump, d + 270, top, 2);
    bools(d + 272, cw, {12, 7, 5, 4, 3, 2, 1, 0});
    PutLe(dump, d + 280, (cw >> 10) & 3, 2);
    PutLe(dump, d + 282, (cw >> 8) & 3, 2);
    std::fill_n(byte_known.begin() + d, kDerivedSize, 1);
  }
  for (unsigned s = 0; s < slot_count_; ++s) {
    slot_known[s] = std::all_of(byte_known.begin() + s * duint_,
                                byte_known.begin() + (s + 1) * duint_, [](auto k) { return k; });
  }
}

std::optional<std::uint64_t> X64dbgDumpLayout::PieceValue(std::span<const std::uint8_t> dump,
                                                          std::span<const std::uint8_t> slot_known,
                                                          RegisterId reg) const {
  for (std::size_t item = 0; item < pieces_.size(); ++item) {
    const Piece& p = pieces_[item];
    if (p.reg != reg || p.duplicate) continue;
    if (!ItemKnown(item, slot_known)) return std::nullopt;
    return Le(dump, p.offset, std::min<std::size_t>(p.size, 8));
  }
  return std::nullopt;
}

std::string_view X64dbgDumpLayout::SlotName(unsigned slot) const {
  if (slot >= slot_count_ || items_of_[slot].empty()) return "";
  const std::uint16_t item = items_of_[slot].front();
  return arch_->info(item < pieces_.size() ? pieces_[item].reg : fpr_[item - pieces_.size()]).name;
}

}  // namespace backstep::core
