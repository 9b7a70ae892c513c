#include "formats/reven/reven_trace_writer.h"

#include <algorithm>
#include <bit>
#include <cstring>
#include <ctime>

#include "formats/reven/reven_format.h"
#include "formats/reven/reven_registers.h"

namespace backstep::core {
namespace {

// Operation ids: PANDA's operation set, renumbered from 0. These cover most
// register changes of real code (rip advancing, pushes and pops, one flag),
// which keeps converted traces close to the producers' size.
constexpr std::uint8_t kRipAdd = 0;     // 0..14: rip += 1..15
constexpr std::uint8_t kFlagsOr = 15;   // 15..23: eflags |= bit
constexpr std::uint8_t kFlagsAnd = 24;  // 24..32: eflags &= ~bit
constexpr std::uint8_t kRspAdd = 33;    // 33..40: rsp += 2 4 8 16 -2 -4 -8 -16
constexpr std::uint16_t kFirstRegisterId = 41;
constexpr int kFlagBits[] = {0, 2, 4, 6, 7, 8, 9, 10, 11};
constexpr std::int64_t kRspDeltas[] = {2, 4, 8, 16, -2, -4, -8, -16};

std::vector<std::uint8_t> LeBytes(std::uint64_t v, int n) {
  std::vector<std::uint8_t> out(n);
  for (int i = 0; i < n; ++i) out[i] = static_cast<std::uint8_t>(v >> (8 * i));
  return out;
}

std::uint64_t Le64(const std::uint8_t* p) {
  std::uint64_t v = 0;
  std::memcpy(&v, p, 8);
  return v;
}

// `declared[i]`: RevenExportRegisters()[i] is in the machine (known at
// position 0; REVEN gives every register it declares an initial value).
RevenMachine ExportMachine(const std::vector<MemoryRegion>& regions, const TraceHeader& header,
                           const std::vector<bool>& declared) {
  RevenMachine m;
  m.phy_size = 8;
  for (const MemoryRegion& r : regions) m.regions.push_back({r.start, r.size});
  const auto& exports = RevenExportRegisters();
  for (std::size_t i = 0; i < exports.size(); ++i) {
    if (!declared[i]) continue;
    m.registers.push_back(
        {static_cast<std::uint16_t>(kFirstRegisterId + i), exports[i].size, exports[i].name});
  }
  // The declared id of the register that stores table register `target`; 0
  // when that register is not declared.
  auto id_of = [&](RegisterId target) {
    for (std::size_t i = 0; i < exports.size(); ++i) {
      if (declared[i] && exports[i].mapping.target[0] == target) {
        return static_cast<std::uint16_t>(kFirstRegisterId + i);
      }
    }
    return std::uint16_t{0};
  };
  // An operation on a register that is not declared is not declared either
  // (EmitRegister() never uses it: such a register is never written).
  const ArchDescription& arch = X86_64();
  const std::uint16_t rip = id_of(arch.pc()), rsp = id_of(arch.sp()), flags = id_of(arch.flags());
  for (int n = 1; n <= 15 && rip != 0; ++n) {
    m.operations.push_back({std::uint8_t(kRipAdd + n - 1), rip, 1, LeBytes(n, 8)});
  }
  for (int i = 0; i < 9 && flags != 0; ++i) {
    m.operations.push_back({std::uint8_t(kFlagsOr + i), flags, 3, LeBytes(1u << kFlagBits[i], 4)});
  }
  for (int i = 0; i < 9 && flags != 0; ++i) {
    m.operations.push_back(
        {std::uint8_t(kFlagsAnd + i), flags, 2, LeBytes(~(1u << kFlagBits[i]), 4)});
  }
  for (int i = 0; i < 8 && rsp != 0; ++i) {
    m.operations.push_back(
        {std::uint8_t(kRspAdd + i), rsp, 1, LeBytes(static_cast<std::uint64_t>(kRspDeltas[i]), 8)});
  }
  for (const auto& [key, value] : header.properties) {
    if (!key.starts_with("cpuid_") || !value.starts_with("0x")) continue;
    const std::uint64_t v = std::strtoull(value.c_str() + 2, nullptr, 16);
    const int bytes = std::max(1, static_cast<int>((std::bit_width(v) + 7) / 8));
    const auto b = LeBytes(v, bytes);
    m.static_registers.emplace_back(key, std::string(b.begin(), b.end()));
  }
  return m;
}

}  // namespace

Status RevenTraceWriter::Begin(
    const TraceHeader& header,
    const std::vector<std::pair<ThreadId, RegisterFile>>& initial_registers,
    const InitialMemoryFn& initial_memory) {
  if (header.arch != &X86_64()) {
    return Status::Unsupported(path_ + ": REVEN traces are x86-64 only");
  }
  if (header.address_kind != AddressKind::kPhysical) {
    return Status::Unsupported(path_ +
                               ": REVEN traces hold physical memory, reached through the page "
                               "tables a trace holds; a virtual-memory trace has none");
  }
  if (initial_registers.size() > 1) {
    return Status::Unsupported(path_ + ": REVEN traces hold one CPU; the source has " +
                               std::to_string(initial_registers.size()) + " threads");
  }
  regs_ = std::make_unique<RegisterFile>(X86_64());
  if (!initial_registers.empty()) {
    thread_ = initial_registers[0].first;
    have_thread_ = true;
    *regs_ = initial_registers[0].second;
  }
  regions_ = header.regions;
  const auto& exports = RevenExportRegisters();
  export_of_.assign(X86_64().register_count(), -1);
  // A REVEN register is declared when every register it holds is known at
  // position 0: the file gives each declared register an initial value, so
  // an unknown one stays unknown only by not being declared.
  std::string unknown;
  declared_.assign(exports.size(), true);
  for (std::size_t i = 0; i < exports.size(); ++i) {
    for (RegisterId t : exports[i].mapping.target) {
      if (t == kNoRegister) continue;
      export_of_[t] = static_cast<int>(i);
      if (!regs_->known(t)) declared_[i] = false;
    }
    if (!declared_[i]) unknown += (unknown.empty() ? "" : " ") + std::string(exports[i].name);
  }
  RevenWriterOptions options;
  options.metadata.tool_name = "backstep";
  options.metadata.tool_info = "backstep convert";
  options.metadata.generation_date = static_cast<std::uint64_t>(std::time(nullptr));
  if (!unknown.empty()) {
    options.metadata.tool_info += "; unknown at position 0, not declared: " + unknown;
    options.metadata.tool_info.resize(
        std::min<std::size_t>(options.metadata.tool_info.size(), kRevenToolInfoMax - 32));
  }
  options.metadata.tool_info += " - using rvnbintrace 1.0.1";
  BACKSTEP_ASSIGN_OR_RETURN(
      writer_, RevenWriter::CreateFile(path_, ExportMachine(regions_, header, declared_), options));
  return WriteInitialState(initial_memory);
}

Status RevenTraceWriter::WriteInitialState(const InitialMemoryFn& initial_memory) {
  std::vector<std::uint8_t> chunk, known;
  for (const MemoryRegion& r : regions_) {
    for (std::uint64_t done = 0; done < r.size;) {
      const std::size_t n =
          static_cast<std::size_t>(std::min<std::uint64_t>(r.size - done, 1 << 20));
      chunk.assign(n, 0);
      known.assign(n, 0);
      if (initial_memory) initial_memory(r.start + done, chunk, known);
      // REVEN has no unknown bytes: an unknown byte becomes 0 (documented).
      for (std::size_t i = 0; i < n; ++i) chunk[i] = known[i] ? chunk[i] : 0;
      writer_->WriteInitialMemory(chunk);
      done += n;
    }
  }
  const auto& exports = RevenExportRegisters();
  std::uint8_t value[64];
  for (std::size_t i = 0; i < exports.size(); ++i) {
    if (!declared_[i]) continue;
    EncodeRevenValue(exports[i], *regs_, value);
    writer_->WriteInitialRegister(static_cast<std::uint16_t>(kFirstRegisterId + i),
                                  std::span<const std::uint8_t>(value, exports[i].size));
    Normalize(i, value);
  }
  return writer_->status();
}

// Without this, a value REVEN truncates (fctrl's upper bytes) would make the
// tracked file disagree with the reader's, and later diffs would be wrong.
void RevenTraceWriter::Normalize(std::size_t index, const std::uint8_t* value) {
  const RevenExportRegister& reg = RevenExportRegisters()[index];
  scratch_.clear();
  AppendRevenValue(reg.mapping, std::span<const std::uint8_t>(value, reg.size), &scratch_);
  for (const RegisterWrite& w : scratch_) regs_->Apply(w);
}

Status RevenTraceWriter::Append(const Event& event) {
  if (!writer_) return Status::InvalidArgument(path_ + ": Append() before Begin()");
  if (!have_thread_) {
    thread_ = event.thread;
    have_thread_ = true;
  }
  const std::string where = path_ + ": event " + std::to_string(events_);
  if (event.thread != thread_) {
    return Status::Unsupported(where + ": REVEN traces hold one CPU; this event runs on thread " +
                               std::to_string(event.thread.value));
  }
  if (event.flags != 0) {
    return Status::Unsupported(where + ": REVEN cannot express an event that clears state");
  }
  // Which REVEN registers the event touches, and their values before it.
  // Diffing before/after, instead of translating each canonical write,
  // turns any canonical operation into something REVEN can say: a REVEN
  // operation when the change matches one, else a SET of the final value.
  touched_.clear();
  for (const RegisterWrite& w : event.registers) {
    const int index = w.reg < export_of_.size() ? export_of_[w.reg] : -1;
    if (index < 0) {
      return Status::Unsupported(where + ": register " + std::string(X86_64().info(w.reg).name) +
                                 " has no REVEN counterpart");
    }
    if (!declared_[index]) {
      const std::string_view held = RevenExportRegisters()[index].name;
      const std::string_view name = X86_64().info(w.reg).name;
      return Status::Unsupported(where + ": it sets " + std::string(name) +
                                 (held == name ? "" : " (in REVEN's " + std::string(held) + ")") +
                                 ", unknown at position 0, and a REVEN trace gives every register "
                                 "it holds an initial value");
    }
    auto same = [&](const Touched& t) { return t.index == static_cast<std::size_t>(index); };
    if (std::none_of(touched_.begin(), touched_.end(), same)) {
      Touched& t = touched_.emplace_back();
      t.index = static_cast<std::size_t>(index);
      EncodeRevenValue(RevenExportRegisters()[t.index], *regs_, t.before);
    }
  }
  for (const RegisterWrite& w : event.registers) regs_->Apply(w);

  if (event.kind == EventKind::kInstruction) {
    writer_->BeginInstruction();
  } else {
    std::string_view d = event.description;
    if (d.empty()) d = EventKindName(event.kind);
    writer_->BeginOther(d.substr(0, 0xff));
  }
  for (const MemoryAccess& m : event.writes) writer_->WriteMemory(m.address, m.data);
  for (const Touched& t : touched_) EmitRegister(t);
  writer_->EndEvent();
  ++events_;
  return writer_->status();
}

void RevenTraceWriter::EmitRegister(const Touched& t) {
  const RevenExportRegister& reg = RevenExportRegisters()[t.index];
  std::uint8_t after[64];
  EncodeRevenValue(reg, *regs_, after);
  const auto id = static_cast<std::uint16_t>(kFirstRegisterId + t.index);
  const RegisterId target = reg.mapping.target[0];
  const ArchDescription& arch = X86_64();
  if (target == arch.pc()) {
    const std::uint64_t delta = Le64(after) - Le64(t.before);
    if (delta >= 1 && delta <= 15) return writer_->WriteOperation(kRipAdd + delta - 1);
  } else if (target == arch.sp()) {
    const auto delta = static_cast<std::int64_t>(Le64(after) - Le64(t.before));
    for (int i = 0; i < 8; ++i) {
      if (delta == kRspDeltas[i]) return writer_->WriteOperation(kRspAdd + i);
    }
  } else if (target == arch.flags()) {
    std::uint32_t before, now;
    std::memcpy(&before, t.before, 4);
    std::memcpy(&now, after, 4);
    for (int i = 0; i < 9; ++i) {
      const std::uint32_t bit = 1u << kFlagBits[i];
      if ((before ^ now) != bit) continue;
      return writer_->WriteOperation(
          static_cast<std::uint8_t>((now & bit ? kFlagsOr : kFlagsAnd) + i));
    }
  }
  writer_->WriteRegister(id, std::span<const std::uint8_t>(after, reg.size));
  Normalize(t.index, after);
}

Status RevenTraceWriter::Finish() {
  if (!writer_) return Status::InvalidArgument(path_ + ": Finish() before Begin()");
  return writer_->Finish();
}

}  // namespace backstep::core
