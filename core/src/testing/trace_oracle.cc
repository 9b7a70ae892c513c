#include "testing/trace_oracle.h"

#include "backstep/testing/fake_trace_generator.h"

namespace backstep::core::testing {

TraceOracle::TraceOracle(const FakeTrace& trace) : trace_(&trace) {
  if (trace.address_kind == AddressKind::kPhysical) {
    translate_ = FakeTranslate;
  } else {
    translate_ = [](Address a) { return std::optional<Address>(a); };
  }
  for (std::uint64_t i = 0; i < trace.events.size(); ++i) {
    first_event_.emplace(trace.events[i].thread.value, i);
  }
  Reset();
  // The initial registers' table (x86-64 or i386); x86-64 without any.
  const ArchDescription& arch = trace_->initial_registers.empty()
                                    ? X86_64()
                                    : trace_->initial_registers.front().second.arch();
  pcs_.resize(trace.events.size());
  changed_.resize(trace.events.size());
  for (std::uint64_t i = 0; i < trace.events.size(); ++i) {
    const FakeEvent& e = trace.events[i];
    const RegisterFile& regs = registers_.at(e.thread.value);
    if ((e.kind == EventKind::kInstruction || e.kind == EventKind::kFrame) &&
        regs.known(arch.pc())) {
      pcs_[i] = regs.u64(arch.pc());
    }
    std::map<Address, std::uint8_t> after;
    for (const FakeAccess& w : e.writes) {
      for (std::size_t j = 0; j < w.data.size(); ++j) after[w.address + j] = w.data[j];
    }
    for (const auto& [address, value] : after) {
      std::optional<std::uint8_t> before = Byte(address);
      if (!before || *before != value) changed_[i].insert(address);
    }
    Apply(e);
  }
  Reset();
}

bool TraceOracle::WriteChanges(std::uint64_t w, Address lo, Address hi) const {
  auto it = changed_[w].lower_bound(lo);
  return it != changed_[w].end() && *it < hi;
}

void TraceOracle::Reset() {
  position_ = 0;
  registers_.clear();
  memory_.clear();
  // The initial registers' table (x86-64 or i386); x86-64 without any.
  const ArchDescription& arch = trace_->initial_registers.empty()
                                    ? X86_64()
                                    : trace_->initial_registers.front().second.arch();
  for (const auto& [tid, file] : trace_->initial_registers) registers_.emplace(tid.value, file);
  for (const auto& [tid, first] : first_event_) registers_.emplace(tid, RegisterFile(arch));
  cleared_ = false;
}

std::optional<std::uint8_t> TraceOracle::ImageByte(Address address) const {
  for (const FakeImageRegion& region : trace_->image) {
    if (address >= region.start && address - region.start < region.bytes.size() &&
        region.known[address - region.start]) {
      return region.bytes[address - region.start];
    }
  }
  return std::nullopt;
}

void TraceOracle::Apply(const FakeEvent& e) {
  for (const FakeAccess& r : e.reads) {
    for (std::size_t j = 0; j < r.data.size(); ++j) memory_[r.address + j] = r.data[j];
  }
  RegisterFile& regs = registers_.at(e.thread.value);
  if (e.flags & kEventClearsRegisters) regs.Clear();
  if (e.flags & kEventClearsMemory) {
    memory_.clear();
    cleared_ = true;
  }
  for (const RegisterWrite& w : e.registers) regs.Apply(w);
  for (const FakeAccess& w : e.writes) {
    for (std::size_t j = 0; j < w.data.size(); ++j) memory_[w.address + j] = w.data[j];
  }
  ++position_;
}

void TraceOracle::Seek(std::uint64_t p) {
  if (p < position_) Reset();
  while (position_ < p) Apply(trace_->events[position_]);
}

const RegisterFile* TraceOracle::Registers(ThreadId thread) const {
  auto it = registers_.find(thread.value);
  return it == registers_.end() ? nullptr : &it->second;
}

std::vector<ThreadId> TraceOracle::threads() const {
  std::vector<ThreadId> out;
  for (const auto& [tid, file] : registers_) {
    auto first = first_event_.find(tid);
    bool initial = false;
    for (const auto& [t, f] : trace_->initial_registers) initial |= t.value == tid;
    if (initial || (first != first_event_.end() && first->second <= position_)) {
      out.push_back(ThreadId(tid));
    }
  }
  return out;
}

std::vector<ThreadId> TraceOracle::all_threads() const {
  std::vector<ThreadId> out;
  for (const auto& [tid, file] : registers_) out.push_back(ThreadId(tid));
  return out;
}

ThreadId TraceOracle::current_thread() const {
  const auto& events = trace_->events;
  if (position_ < events.size()) return events[position_].thread;
  if (!events.empty()) return events.back().thread;
  if (!trace_->initial_registers.empty()) return trace_->initial_registers.front().first;
  return ThreadId();
}

std::optional<std::uint8_t> TraceOracle::Byte(Address address) const {
  auto it = memory_.find(address);
  if (it != memory_.end()) return it->second;
  if (!cleared_) {
    if (auto b = ImageByte(address)) return b;
  }
  for (std::uint64_t e = position_; e < trace_->events.size(); ++e) {
    const FakeEvent& ev = trace_->events[e];
    for (const FakeAccess& r : ev.reads) {
      if (address >= r.address && address < r.address + r.data.size()) {
        return r.data[address - r.address];
      }
    }
    if (ev.flags & kEventClearsMemory) return std::nullopt;
    for (const FakeAccess& w : ev.writes) {
      if (address >= w.address && address < w.address + w.data.size()) return std::nullopt;
    }
  }
  return std::nullopt;
}

}  // namespace backstep::core::testing
