#include "formats/reven/reven_registers.h"

#include <algorithm>
#include <charconv>

#include "backstep/core/arch.h"

namespace backstep::core {
namespace {

constexpr std::uint32_t kTopMask = 0x3800;  // fstat bits 11-13
constexpr int kTopShift = 11;

// The registers that need more than a name lookup. Everything else maps by
// name or alias through X86_64().Find(), resized when the sizes differ.
struct SpecialRegister {
  std::string_view name;
  RevenConversion panda;  // the machine declares `top`
  RevenConversion bochs;  // it does not
  std::string_view target;
};
constexpr SpecialRegister kSpecial[] = {
    {"x87status", RevenConversion::kStatusNoTop, RevenConversion::kResize, "fstat"},
    {"x87tags", RevenConversion::kTagMask, RevenConversion::kResize, "ftag"},
    {"top", RevenConversion::kTop, RevenConversion::kTop, "fstat"},
};

RegisterId Must(std::string_view name) {
  auto id = X86_64().Find(name);
  return id ? *id : kNoRegister;
}

// "zmm<N>" with N in 0..31, else -1. zmmN is not in the table under that
// name: the table stores gdb's pieces (arch.h), so it needs a split.
int ZmmIndex(std::string_view name) {
  if (name.size() < 4 || name.size() > 5 || name.substr(0, 3) != "zmm") return -1;
  int n = -1;
  auto [end, ec] = std::from_chars(name.data() + 3, name.data() + name.size(), n);
  if (ec != std::errc() || end != name.data() + name.size() || n < 0 || n > 31) return -1;
  if (name.size() == 5 && name[3] == '0') return -1;  // "zmm05"
  return n;
}

RevenRegisterMapping Mapping(RevenConversion c, RegisterId a, std::uint16_t copy = 0) {
  RevenRegisterMapping m;
  m.conversion = c;
  m.target[0] = a;
  m.copy_size = copy;
  return m;
}

void PushOp(RegisterId reg, RegisterOp op, std::uint32_t operand, std::vector<RegisterWrite>* out) {
  RegisterWrite& w = out->emplace_back();
  w.reg = reg;
  w.op = op;
  for (int i = 0; i < 4; ++i) w.value[i] = static_cast<std::uint8_t>(operand >> (8 * i));
}

std::uint32_t Le(std::span<const std::uint8_t> v, std::size_t n) {
  std::uint32_t x = 0;
  for (std::size_t i = 0; i < std::min(n, v.size()); ++i) x |= std::uint32_t{v[i]} << (8 * i);
  return x;
}

}  // namespace

RevenRegisterMapping MapRevenRegister(std::string_view name, std::uint16_t size, bool panda_x87) {
  const ArchDescription& arch = X86_64();
  for (const SpecialRegister& s : kSpecial) {
    if (s.name != name) continue;
    const RevenConversion c = panda_x87 ? s.panda : s.bochs;
    const RegisterId target = Must(s.target);
    return Mapping(c, target, std::min<std::uint16_t>(size, arch.info(target).size));
  }
  if (int n = ZmmIndex(name); n >= 0) {
    const std::string i = std::to_string(n);
    RevenRegisterMapping m = Mapping(RevenConversion::kZmm, Must("xmm" + i));
    m.target[1] = Must("ymm" + i + "h");
    m.target[2] = Must("zmm" + i + "h");
    return m;
  }
  auto id = arch.Find(name);
  if (!id || arch.info(*id).derived) return RevenRegisterMapping();
  const std::uint16_t canonical = arch.info(*id).size;
  if (canonical == size) return Mapping(RevenConversion::kDirect, *id, size);
  return Mapping(RevenConversion::kResize, *id, std::min(canonical, size));
}

void AppendRevenValueSlow(const RevenRegisterMapping& m, std::span<const std::uint8_t> value,
                          std::vector<RegisterWrite>* out) {
  switch (m.conversion) {
    case RevenConversion::kUnmapped:
      return;
    case RevenConversion::kDirect:
    case RevenConversion::kResize: {
      RegisterWrite& w = out->emplace_back();  // value[] starts zeroed: zero-extension
      w.reg = m.target[0];
      std::memcpy(w.value, value.data(), std::min<std::size_t>(m.copy_size, value.size()));
      return;
    }
    case RevenConversion::kZmm: {
      static constexpr std::size_t kOffset[3] = {0, 16, 32}, kSize[3] = {16, 16, 32};
      for (int i = 0; i < 3; ++i) {
        RegisterWrite& w = out->emplace_back();
        w.reg = m.target[i];
        if (value.size() > kOffset[i]) {
          std::memcpy(w.value, value.data() + kOffset[i],
                      std::min(kSize[i], value.size() - kOffset[i]));
        }
      }
      return;
    }
    case RevenConversion::kTagMask: {
      const std::uint32_t valid = value.empty() ? 0 : value[0];
      std::uint32_t tags = 0;
      for (int i = 0; i < 8; ++i) tags |= ((valid >> i) & 1 ? 0u : 3u) << (2 * i);
      PushOp(m.target[0], RegisterOp::kSet, tags, out);
      return;
    }
    case RevenConversion::kStatusNoTop:
      PushOp(m.target[0], RegisterOp::kAnd, kTopMask, out);
      PushOp(m.target[0], RegisterOp::kOr, Le(value, 2) & ~kTopMask & 0xffff, out);
      return;
    case RevenConversion::kTop:
      PushOp(m.target[0], RegisterOp::kAnd, ~kTopMask, out);
      PushOp(m.target[0], RegisterOp::kOr, (Le(value, 1) & 7) << kTopShift, out);
      return;
  }
}

// Bochs style rather than PANDA's: its x87status and x87tags are the
// architectural words, so the writer needs no `top` register and no
// AND/OR pairs; any REVEN reader understands both.
const std::vector<RevenExportRegister>& RevenExportRegisters() {
  static const std::vector<RevenExportRegister>* const kList = [] {
    // REVEN sizes of the registers whose REVEN size differs from ours.
    struct Size {
      std::string_view name;
      std::uint16_t size;
    };
    static constexpr Size kSizes[] = {
        {"cs", 2},        {"ds", 2},      {"es", 2},         {"ss", 2},
        {"fs", 2},        {"gs", 2},      {"x87control", 2}, {"x87opcode", 2},
        {"x87status", 2}, {"x87tags", 2}, {"x87lastip", 8},  {"x87lastdp", 8},
    };
    auto* list = new std::vector<RevenExportRegister>;
    const ArchDescription& arch = X86_64();
    for (const RegisterInfo& info : arch.registers()) {
      if (info.derived) continue;
      std::string name(info.alias.empty() ? info.name : info.alias);
      if (info.name == "fstat") name = "x87status";
      if (info.name == "ftag") name = "x87tags";
      if (name.starts_with("ymm") || name.starts_with("zmm")) continue;  // part of zmmN
      if (name.starts_with("xmm")) name = "zmm" + name.substr(3);
      std::uint16_t size = name.starts_with("zmm") ? 64 : info.size;
      for (const Size& s : kSizes) {
        if (s.name == name) size = s.size;
      }
      list->push_back({name, size, MapRevenRegister(name, size, /*panda_x87=*/false)});
    }
    return list;
  }();
  return *kList;
}

void EncodeRevenValue(const RevenExportRegister& reg, const RegisterFile& file, std::uint8_t* out) {
  std::memset(out, 0, reg.size);
  const RevenRegisterMapping& m = reg.mapping;
  if (m.conversion == RevenConversion::kZmm) {
    std::size_t at = 0;
    for (RegisterId piece : m.target) {
      auto bytes = file.bytes(piece);
      std::memcpy(out + at, bytes.data(), bytes.size());
      at += bytes.size();
    }
    return;
  }
  // kDirect and kResize: the low bytes, zero-extended.
  auto bytes = file.bytes(m.target[0]);
  std::memcpy(out, bytes.data(), std::min<std::size_t>(bytes.size(), reg.size));
}

}  // namespace backstep::core
