#include "formats/reven/reven_machine.h"

#include <algorithm>
#include <unordered_map>
#include <unordered_set>

#include "formats/reven/reven_container.h"
#include "util/hex.h"

namespace backstep::core {
namespace {

constexpr std::string_view kSection = "machine description";

class MachineParser {
 public:
  MachineParser(ByteReader r, const std::string& file) : r_(r), file_(file) {}

  Expected<RevenMachine> Parse() {
    BACKSTEP_RETURN_IF_ERROR(ParseArch());
    BACKSTEP_RETURN_IF_ERROR(ParseRegions());
    BACKSTEP_RETURN_IF_ERROR(ParseRegisters());
    BACKSTEP_RETURN_IF_ERROR(ParseOperations());
    BACKSTEP_RETURN_IF_ERROR(ParseStatics());
    return std::move(m_);
  }

 private:
  Status Error(std::uint64_t at, std::string_view what) const {
    return RevenCorruption(file_, kSection, at, what);
  }
  Status Cut(std::uint64_t at) const { return Error(at, "section ends inside a field"); }

  // Reads a u32 count of entries of at least `min_entry` bytes each, failing
  // before anything is allocated if the payload cannot hold them: a flipped
  // count must not reserve gigabytes.
  Expected<std::uint32_t> Count(std::string_view what, std::uint64_t min_entry) {
    const std::uint64_t at = r_.offset();
    const std::uint32_t n = r_.U32();
    if (!r_.ok()) return Cut(at);
    if (std::uint64_t{n} * min_entry > r_.remaining()) {
      return Error(at, std::to_string(n) + " " + std::string(what) + " cannot fit in the " +
                           std::to_string(r_.remaining()) + " bytes left");
    }
    return n;
  }

  Status ParseArch() {
    const std::uint64_t at = r_.offset();
    m_.arch_magic = r_.U32();
    m_.phy_size = r_.U8();
    if (!r_.ok()) return Cut(at);
    if (m_.arch_magic == kRevenArchArm64V1) {
      return Status::Unsupported(file_ + ": " + std::string(kSection) + " at offset " + HexU64(at) +
                                 ": arm64 REVEN traces are not supported yet");
    }
    if (m_.arch_magic != kRevenArchX64V1) {
      return Error(at, "unknown architecture magic " + HexU64(m_.arch_magic));
    }
    if (m_.phy_size < kRevenMinPhySize || m_.phy_size > kRevenMaxPhySize) {
      return Error(at + 4,
                   "physical address size " + std::to_string(m_.phy_size) + " is not in 1..8");
    }
    return Status::Ok();
  }

  Status ParseRegions() {
    BACKSTEP_ASSIGN_OR_RETURN(std::uint32_t n, Count("regions", 2u * m_.phy_size));
    m_.regions.reserve(n);
    std::uint64_t total = 0;
    for (std::uint32_t i = 0; i < n; ++i) {
      const std::uint64_t at = r_.offset();
      RevenRegion region{r_.Le(m_.phy_size), r_.Le(m_.phy_size)};
      if (!r_.ok()) return Cut(at);
      // The last byte must be addressable, and the sum must fit in 64 bits.
      if ((region.size != 0 && region.size - 1 > ~std::uint64_t{0} - region.start) ||
          region.size > ~std::uint64_t{0} - total) {
        return Error(at, "region " + std::to_string(i) + " overflows 64 bits");
      }
      total += region.size;
      m_.regions.push_back(region);
    }
    // Overlapping regions would give two file offsets to one address; no
    // producer writes them, so they are corruption rather than a choice.
    std::vector<RevenRegion> sorted = m_.regions;
    std::sort(sorted.begin(), sorted.end(),
              [](const RevenRegion& a, const RevenRegion& b) { return a.start < b.start; });
    for (std::size_t i = 1; i < sorted.size(); ++i) {
      const RevenRegion& prev = sorted[i - 1];
      if (prev.size != 0 && sorted[i].size != 0 && sorted[i].start - prev.start < prev.size) {
        return Error(r_.offset(), "regions at " + HexU64(prev.start) + " and " +
                                      HexU64(sorted[i].start) + " overlap");
      }
    }
    return Status::Ok();
  }

  Status ParseRegisters() {
    BACKSTEP_ASSIGN_OR_RETURN(std::uint32_t n, Count("registers", 5));
    m_.registers.reserve(n);
    std::unordered_set<std::string> names;
    for (std::uint32_t i = 0; i < n; ++i) {
      const std::uint64_t at = r_.offset();
      RevenRegisterDecl reg;
      reg.id = r_.U16();
      reg.size = r_.U16();
      reg.name = std::string(r_.String(r_.U8()));
      if (!r_.ok()) return Cut(at);
      // A 0-byte register would make every value of it empty; the reference
      // writer cannot produce one.
      if (reg.size == 0) return Error(at, "register \"" + reg.name + "\" has size 0");
      if (!sizes_.emplace(reg.id, reg.size).second) {
        return Error(at, "register id " + std::to_string(reg.id) + " declared twice");
      }
      if (!names.insert(reg.name).second) {
        return Error(at, "register name \"" + reg.name + "\" declared twice");
      }
      m_.registers.push_back(std::move(reg));
    }
    return Status::Ok();
  }

  Status ParseOperations() {
    BACKSTEP_ASSIGN_OR_RETURN(std::uint32_t n, Count("register operations", 4));
    m_.operations.reserve(n);
    std::unordered_set<std::uint16_t> ops;
    for (std::uint32_t i = 0; i < n; ++i) {
      const std::uint64_t at = r_.offset();
      RevenOperationDecl op;
      op.file_offset = at;
      op.id = r_.U8();
      op.reg = r_.U16();
      op.op = r_.U8();
      if (!r_.ok()) return Cut(at);
      if (op.id == kRevenInvalidOperationId) return Error(at, "operation id 0xff is reserved");
      const auto target = sizes_.find(op.reg);
      if (target == sizes_.end()) {
        return Error(at, "operation " + std::to_string(op.id) + " targets undeclared register id " +
                             std::to_string(op.reg));
      }
      if (sizes_.count(op.id) != 0) {
        return Error(at, "operation id " + std::to_string(op.id) + " is also a register id");
      }
      if (!ops.insert(op.id).second) {
        return Error(at, "operation id " + std::to_string(op.id) + " declared twice");
      }
      if (op.op > kRevenMaxOperator) {
        return Error(at, "operation " + std::to_string(op.id) + " has unknown operator " +
                             std::to_string(op.op));
      }
      auto operand = r_.Bytes(target->second);
      if (!r_.ok()) return Cut(at);
      op.operand.assign(operand.begin(), operand.end());
      m_.operations.push_back(std::move(op));
    }
    return Status::Ok();
  }

  Status ParseStatics() {
    BACKSTEP_ASSIGN_OR_RETURN(std::uint32_t n, Count("static registers", 2));
    m_.static_registers.reserve(n);
    for (std::uint32_t i = 0; i < n; ++i) {
      const std::uint64_t at = r_.offset();
      std::string name(r_.String(r_.U8()));
      std::string value(r_.String(r_.U8()));
      if (!r_.ok()) return Cut(at);
      m_.static_registers.emplace_back(std::move(name), std::move(value));
    }
    return Status::Ok();
  }

  ByteReader r_;
  const std::string& file_;
  RevenMachine m_;
  std::unordered_map<std::uint16_t, std::uint16_t> sizes_;  // register id -> size
};

void AppendLe(std::uint64_t v, int bytes, std::vector<std::uint8_t>* out) {
  for (int i = 0; i < bytes; ++i) out->push_back(static_cast<std::uint8_t>(v >> (8 * i)));
}

bool AppendStr8(std::string_view s, std::vector<std::uint8_t>* out) {
  if (s.size() > 0xff) return false;
  out->push_back(static_cast<std::uint8_t>(s.size()));
  out->insert(out->end(), s.begin(), s.end());
  return true;
}

}  // namespace

std::uint64_t RevenMachine::TotalMemory() const {
  std::uint64_t total = 0;
  for (const RevenRegion& r : regions) total += r.size;
  return total;
}

Expected<RevenMachine> ParseRevenMachine(ByteReader payload, const std::string& file) {
  return MachineParser(payload, file).Parse();
}

Status AppendRevenMachine(const RevenMachine& m, std::vector<std::uint8_t>* out) {
  AppendLe(m.arch_magic, 4, out);
  out->push_back(m.phy_size);
  const int phy = std::clamp<int>(m.phy_size, 0, 8);
  AppendLe(m.regions.size(), 4, out);
  for (const RevenRegion& r : m.regions) {
    if (phy < 8 && ((r.start >> (8 * phy)) != 0 || (r.size >> (8 * phy)) != 0)) {
      return Status::InvalidArgument("REVEN region wider than PHY_SIZE");
    }
    AppendLe(r.start, phy, out);
    AppendLe(r.size, phy, out);
  }
  AppendLe(m.registers.size(), 4, out);
  for (const RevenRegisterDecl& r : m.registers) {
    AppendLe(r.id, 2, out);
    AppendLe(r.size, 2, out);
    if (!AppendStr8(r.name, out)) return Status::InvalidArgument("REVEN register name too long");
  }
  AppendLe(m.operations.size(), 4, out);
  for (const RevenOperationDecl& op : m.operations) {
    out->push_back(op.id);
    AppendLe(op.reg, 2, out);
    out->push_back(op.op);
    out->insert(out->end(), op.operand.begin(), op.operand.end());
  }
  AppendLe(m.static_registers.size(), 4, out);
  for (const auto& [name, value] : m.static_registers) {
    if (!AppendStr8(name, out) || !AppendStr8(value, out)) {
      return Status::InvalidArgument("REVEN static register name or value too long");
    }
  }
  return Status::Ok();
}

}  // namespace backstep::core
